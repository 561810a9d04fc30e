package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Settings is a backend's own block of the config (runtimes.<name>): a
// pointer to a struct whose yaml tags name the block's keys in the config
// file and whose json tags name them in Options.Settings. The backend
// declares it, its defaults (Registration.Settings) and its checks
// (Check) beside its Factory; internal/config keeps the block as it was
// written and has the registry decode and check it (NewSettings,
// CheckSettings), so adding a backend changes nothing there.
type Settings interface {
	// Check returns an error for each value of the block that is wrong,
	// each starting with its key inside the block ("platform must be one
	// of systrap, ptrace, got ...").
	Check() []error
}

// SettingsKey is the config key of runtime name's block.
func SettingsKey(name string) string { return "runtimes." + name }

// NewSettings returns a new value of runtime name's block holding its
// defaults; nil when the runtime has no block. ok is false when no
// runtime of that name is registered.
func NewSettings(name string) (s Settings, ok bool) {
	r, ok := lookup(name)
	if !ok || r.Settings == nil {
		return nil, ok
	}
	return r.Settings(), true
}

// CheckSettings checks runtime name's block s, each error naming its key
// in full (runtimes.<name>.<key>).
func CheckSettings(name string, s Settings) []error {
	var errs []error
	for _, err := range s.Check() {
		errs = append(errs, fmt.Errorf("%s.%w", SettingsKey(name), err))
	}
	return errs
}

// DecodeSettings decodes raw, runtime name's block as JSON
// (Options.Settings), over s, which holds the block's defaults, and checks
// the result; an unknown key is an error. Factories call it.
func DecodeSettings(name string, raw json.RawMessage, s Settings) error {
	if len(bytes.TrimSpace(raw)) != 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(s); err != nil {
			return fmt.Errorf("%s: %w", SettingsKey(name), err)
		}
	}
	return errors.Join(CheckSettings(name, s)...)
}

// NamesWithSettings lists the registered runtimes that have a block of
// settings, sorted.
func NamesWithSettings() []string {
	var out []string
	for _, n := range Names() {
		if r, _ := lookup(n); r.Settings != nil {
			out = append(out, n)
		}
	}
	return out
}

// OneOf is nil when value is one of allowed, else the error that names
// key, the allowed values and value: a block's check of an enumerated
// setting.
func OneOf(key, value string, allowed []string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return fmt.Errorf("%s must be one of %s, got %q", key, strings.Join(allowed, ", "), value)
}
