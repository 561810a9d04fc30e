package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Runtimes holds each runtime's own block of settings (runtimes.<name>);
// each runtime is handed its own block.
// A new backend adds its block here, with its defaults in Default and its
// checks in validateRuntimes.
type Runtimes struct {
	GVisor  GVisor  `yaml:"gvisor" json:"gvisor"`
	MicroVM MicroVM `yaml:"microvm" json:"microvm"`
}

// MicroVM is the microVM runtime's block (runtimes.microvm).
type MicroVM struct {
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

// GVisor is the gVisor runtime's block (runtimes.gvisor).
type GVisor struct {
	// RunscPath is the runsc binary; empty looks next to the hutch binary,
	// then on PATH.
	RunscPath string `yaml:"runsc_path,omitempty" json:"runsc_path,omitempty"`
	// Platform is runsc's platform: systrap (the default) or ptrace.
	Platform string `yaml:"platform" json:"platform"`
	// SystrapFastPath is whether gVisor's systrap platform may spin
	// instead of sleeping while it waits for a sandbox's threads: "on"
	// (gVisor's adaptive default) or "off", which saves CPU when many
	// sandboxes mostly start short processes but makes every system call
	// inside a sandbox tens of times slower.
	SystrapFastPath string `yaml:"systrap_fast_path" json:"systrap_fast_path"`
	// Debug keeps runsc's debug logs of every sandbox under the runtime's
	// state directory (logs/<id>/); they are large.
	Debug bool `yaml:"debug" json:"debug"`
}

// The values of runtimes.gvisor.systrap_fast_path.
const (
	FastPathOn  = "on"
	FastPathOff = "off"
)

// FastPathModes lists the values of runtimes.gvisor.systrap_fast_path.
var FastPathModes = []string{FastPathOn, FastPathOff}

// The values of runtimes.gvisor.platform.
const (
	PlatformSystrap = "systrap"
	PlatformPtrace  = "ptrace"
)

// Platforms lists the values of runtimes.gvisor.platform.
var Platforms = []string{PlatformSystrap, PlatformPtrace}

// defaultRuntimes are the runtime blocks' defaults.
func defaultRuntimes() Runtimes {
	return Runtimes{
		GVisor:  GVisor{Platform: PlatformSystrap, SystrapFastPath: FastPathOn},
		MicroVM: MicroVM{Accel: AccelAuto},
	}
}

// validateRuntimes checks every runtime block.
func (c *Config) validateRuntimes() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	g := c.Runtimes.GVisor
	if !slices.Contains(FastPathModes, g.SystrapFastPath) {
		bad("runtimes.gvisor.systrap_fast_path must be one of %s, got %q", strings.Join(FastPathModes, ", "), g.SystrapFastPath)
	}
	if !slices.Contains(Platforms, g.Platform) {
		bad("runtimes.gvisor.platform must be one of %s, got %q", strings.Join(Platforms, ", "), g.Platform)
	}
	if c.DefaultRuntime == "" {
		bad("default_runtime must name a runtime (gvisor, microvm)")
	}
	if len(c.OfferedRuntimes) > 0 && !slices.Contains(c.OfferedRuntimes, c.DefaultRuntime) {
		bad("offered_runtimes %v must include default_runtime %q", c.OfferedRuntimes, c.DefaultRuntime)
	}
	if a := c.Runtimes.MicroVM.Accel; !slices.Contains(Accels, a) {
		bad("runtimes.microvm.accel must be one of %s, got %q", strings.Join(Accels, ", "), a)
	}
	return errs
}

// RuntimeSettings is the block of runtime name (runtimes.<name>) as
// JSON, for runtime.Options.Settings; nil for a runtime without one.
func (c *Config) RuntimeSettings(name string) (json.RawMessage, error) {
	v := reflect.ValueOf(c.Runtimes)
	for i := 0; i < v.NumField(); i++ {
		if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == name {
			b, err := json.Marshal(v.Field(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("runtimes.%s: %w", name, err)
			}
			return b, nil
		}
	}
	return nil, nil
}

// alias is a deprecated top-level key that now lives in a runtime block.
type alias struct {
	old, new string
	// field returns the old key's field and the new one's.
	field func(c *Config) (old, new *string)
}

// aliases are the deprecated keys that are still read.
var aliases = []alias{
	{"systrap_fast_path", "runtimes.gvisor.systrap_fast_path", func(c *Config) (*string, *string) {
		return &c.SystrapFastPath, &c.Runtimes.GVisor.SystrapFastPath
	}},
	{"runtime", "default_runtime", func(c *Config) (*string, *string) {
		return &c.Runtime, &c.DefaultRuntime
	}},
}

// applyAliases moves the values of deprecated keys found in node (the
// config mapping) to their new place and records a warning for each; a
// file that sets both the old and the new key is an error.
func (c *Config) applyAliases(node *yaml.Node) error {
	for _, a := range aliases {
		if mappingValue(node, a.old) == nil {
			continue
		}
		old, cur := a.field(c)
		if pathValue(node, a.new) != nil {
			return fmt.Errorf("%s is deprecated and %s is set too; keep only %s", a.old, a.new, a.new)
		}
		*cur, *old = *old, ""
		c.Deprecated = append(c.Deprecated, fmt.Sprintf("%s is deprecated; use %s", a.old, a.new))
	}
	return nil
}

// pathValue is the value node at a dotted key path in a mapping, or nil.
func pathValue(m *yaml.Node, path string) *yaml.Node {
	for _, k := range strings.Split(path, ".") {
		if m = mappingValue(m, k); m == nil {
			return nil
		}
	}
	return m
}
