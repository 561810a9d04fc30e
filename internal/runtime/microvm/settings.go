package microvm

import (
	"encoding/json"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Settings is the runtime's block of the config (runtimes.microvm).
type Settings struct {
	// QEMUPath is qemu-system-x86_64; empty looks on PATH.
	QEMUPath string `yaml:"qemu_path,omitempty" json:"qemu_path,omitempty"`
	// Kernel is the guest kernel (a vmlinuz whose modules are in
	// /lib/modules/<version>); empty takes the newest Debian cloud kernel
	// in /boot (vmlinuz-*-cloud-amd64).
	Kernel string `yaml:"kernel,omitempty" json:"kernel,omitempty"`
	// Accel is QEMU's accelerator: auto (KVM where it is usable, else
	// TCG), kvm or tcg.
	Accel string `yaml:"accel" json:"accel"`
}

// The values of runtimes.microvm.accel.
const (
	AccelAuto = "auto"
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// Accels lists the values of runtimes.microvm.accel.
var Accels = []string{AccelAuto, AccelKVM, AccelTCG}

// DefaultSettings are the block's defaults.
func DefaultSettings() *Settings { return &Settings{Accel: AccelAuto} }

// Check names each value of the block that is wrong.
func (s *Settings) Check() []error {
	if err := runtime.OneOf("accel", s.Accel, Accels); err != nil {
		return []error{err}
	}
	return nil
}

// settings decodes the runtime's block of the config (runtimes.microvm)
// over its defaults; an unknown field is an error.
func settings(raw json.RawMessage) (Settings, error) {
	s := DefaultSettings()
	err := runtime.DecodeSettings(Name, raw, s)
	return *s, err
}
