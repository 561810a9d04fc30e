package gvisor

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Settings is the runtime's block of the config (runtimes.gvisor).
type Settings struct {
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
	// issue 46: restores into containers created ahead (ahead.go).
	// RestoreAhead is how many containers "runsc create" makes ahead for
	// each recently restored snapshot (one without a network), so that
	// the next restores of it skip the sandbox's start; 0 makes none.
	// RestoreAheadSources is how many snapshots have them, the most
	// recently restored.
	RestoreAhead        int `yaml:"restore_ahead" json:"restore_ahead"`
	RestoreAheadSources int `yaml:"restore_ahead_sources" json:"restore_ahead_sources"`
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

// DefaultSettings are the block's defaults.
func DefaultSettings() *Settings {
	return &Settings{Platform: PlatformSystrap, SystrapFastPath: FastPathOn,
		RestoreAhead: 2, RestoreAheadSources: 4} // issue 46
}

// Check names each value of the block that is wrong.
func (s *Settings) Check() []error {
	var errs []error
	if err := runtime.OneOf("systrap_fast_path", s.SystrapFastPath, FastPathModes); err != nil {
		errs = append(errs, err)
	}
	if err := runtime.OneOf("platform", s.Platform, Platforms); err != nil {
		errs = append(errs, err)
	}
	if s.RestoreAhead < 0 || s.RestoreAhead > 16 || s.RestoreAheadSources < 0 || s.RestoreAheadSources > 64 { // issue 46
		errs = append(errs, fmt.Errorf("restore_ahead must be 0-16 and restore_ahead_sources 0-64, got %d and %d", s.RestoreAhead, s.RestoreAheadSources))
	}
	return errs
}

// settings decodes the runtime's block of the config (runtimes.gvisor)
// over its defaults; an unknown field is an error.
func settings(raw json.RawMessage) (Settings, error) {
	s := DefaultSettings()
	err := runtime.DecodeSettings(Name, raw, s)
	return *s, err
}

// findRunsc resolves the runsc binary: runtimes.gvisor.runsc_path, else
// next to the hutch binary, else on PATH.
func findRunsc(path string) (string, error) {
	p, err := runtime.FindBinary(path, "runsc")
	if errors.Is(err, runtime.ErrBinaryNotFound) {
		return "", fmt.Errorf("%w (build it with `make build`, or set runtimes.gvisor.runsc_path)", err)
	}
	return p, err
}
