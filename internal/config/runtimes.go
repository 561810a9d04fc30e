package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Runtimes are the runtimes' own blocks of settings (runtimes.<name>), as
// the file wrote them. A backend declares its block's type, defaults and
// checks beside its Factory and registers them with it
// (runtime.Registration.Settings); this package knows no backend and has
// the registry decode and check each block (Decode). A runtime whose
// block the file leaves out has its block's defaults. Only the blocks of
// the runtimes linked into the program (internal/runtime/runtimes) are
// known keys.
type Runtimes struct {
	// blocks maps a runtime's name to its block. Copies of a Config share
	// it, so it is never changed in place: Set replaces it.
	blocks map[string]*yaml.Node
}

// defaultRuntimes are the runtime blocks' defaults: none written, so every
// runtime has its registration's defaults.
func defaultRuntimes() Runtimes { return Runtimes{} }

// UnmarshalYAML keeps each block of the runtimes mapping, after decoding
// it over its defaults so that a value of the wrong type is an error with
// its line, as for every other key.
func (r *Runtimes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return n.Decode(&map[string]yaml.Node{})
	}
	blocks := maps.Clone(r.blocks)
	if blocks == nil {
		blocks = map[string]*yaml.Node{}
	}
	var typeErrs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, block := n.Content[i].Value, n.Content[i+1]
		if block.ShortTag() == "!!null" {
			continue
		}
		var err error
		if block.Kind != yaml.MappingNode {
			err = block.Decode(&map[string]yaml.Node{})
		} else if s, _ := runtime.NewSettings(name); s != nil {
			err = block.Decode(s)
		}
		if te := (*yaml.TypeError)(nil); errors.As(err, &te) {
			typeErrs = append(typeErrs, te.Errors...)
		} else if err != nil {
			return err
		}
		blocks[name] = block
	}
	r.blocks = blocks
	if len(typeErrs) > 0 {
		return &yaml.TypeError{Errors: typeErrs}
	}
	return nil
}

// MarshalYAML renders every block, the defaults filled in: that of each
// registered runtime that has one, and each one the file wrote.
func (r Runtimes) MarshalYAML() (any, error) {
	out := map[string]any{}
	for _, name := range r.names() {
		if s, err := r.Decode(name); err == nil && s != nil {
			out[name] = s
		} else if b := r.blocks[name]; b != nil {
			out[name] = b
		}
	}
	return out, nil
}

// names are the registered runtimes that have a block and the names of
// the blocks written, sorted.
func (r Runtimes) names() []string {
	names := runtime.NamesWithSettings()
	for name := range r.blocks {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Decode is runtime name's block, decoded by the registry over the
// block's defaults: nil for a runtime that is not registered or has no
// block (and none is written).
func (r Runtimes) Decode(name string) (runtime.Settings, error) {
	s, ok := runtime.NewSettings(name)
	block := r.blocks[name]
	switch {
	case block == nil:
		return s, nil
	case !ok:
		return nil, fmt.Errorf("no runtime of that name (have %s)", strings.Join(runtime.Names(), ", "))
	case s == nil:
		return nil, errors.New("the runtime has no settings")
	}
	if err := block.Decode(s); err != nil {
		return nil, tidyYAMLError(err)
	}
	return s, nil
}

// Set sets key of runtime name's block to value, as if the file had (a
// flag that overrides a key: --runsc-path); Validate checks it.
func (r *Runtimes) Set(name, key string, value any) error {
	var v yaml.Node
	if err := v.Encode(value); err != nil {
		return fmt.Errorf("%s.%s: %w", runtime.SettingsKey(name), key, err)
	}
	block := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if old := r.blocks[name]; old != nil && old.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(old.Content); i += 2 {
			if old.Content[i].Value != key {
				block.Content = append(block.Content, old.Content[i], old.Content[i+1])
			}
		}
	}
	block.Content = append(block.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &v)
	blocks := maps.Clone(r.blocks)
	if blocks == nil {
		blocks = map[string]*yaml.Node{}
	}
	blocks[name] = block
	r.blocks = blocks
	return nil
}

// checkRuntimeKeys reports the first key of the runtimes mapping n that
// names no registered runtime with a block, or a key of a block that the
// block's type has no field for.
func checkRuntimeKeys(n *yaml.Node, prefix string) error {
	if n.Kind != yaml.MappingNode {
		return nil // UnmarshalYAML reports it
	}
	types := map[string]reflect.Type{}
	for _, name := range runtime.NamesWithSettings() {
		s, _ := runtime.NewSettings(name)
		types[name] = reflect.TypeOf(s)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		t, ok := types[k.Value]
		if !ok {
			return fmt.Errorf("line %d: unknown key %q%s", k.Line, prefix+k.Value, suggestion(k.Value, types))
		}
		if err := checkKeys(n.Content[i+1], t, prefix+k.Value+"."); err != nil {
			return err
		}
	}
	return nil
}

// validateRuntimes checks default_runtime, offered_runtimes and, through
// the registry, every runtime block written.
func (c *Config) validateRuntimes() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, name := range slices.Sorted(maps.Keys(c.Runtimes.blocks)) {
		s, err := c.Runtimes.Decode(name)
		if err != nil {
			bad("%s: %v", runtime.SettingsKey(name), err)
		} else if s != nil {
			errs = append(errs, runtime.CheckSettings(name, s)...)
		}
	}
	if c.DefaultRuntime == "" {
		bad("default_runtime must name a runtime (%s)", strings.Join(runtime.Names(), ", "))
	}
	if len(c.OfferedRuntimes) > 0 && !slices.Contains(c.OfferedRuntimes, c.DefaultRuntime) {
		bad("offered_runtimes %v must include default_runtime %q", c.OfferedRuntimes, c.DefaultRuntime)
	}
	return errs
}

// RuntimeSettings is the block of runtime name (runtimes.<name>) as
// JSON, for runtime.Options.Settings, its defaults filled in; nil for a
// runtime without one.
func (c *Config) RuntimeSettings(name string) (json.RawMessage, error) {
	s, err := c.Runtimes.Decode(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", runtime.SettingsKey(name), err)
	}
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", runtime.SettingsKey(name), err)
	}
	return b, nil
}

// alias is a deprecated top-level key that now lives elsewhere (in a
// runtime's block, or under another name).
type alias struct {
	old, new string
	// move moves the old key's value to the new key and clears the old.
	move func(c *Config) error
}

// aliases are the deprecated keys that are still read.
var aliases = []alias{
	{"systrap_fast_path", "runtimes.gvisor.systrap_fast_path", func(c *Config) error {
		v := c.SystrapFastPath
		c.SystrapFastPath = ""
		return c.Runtimes.Set("gvisor", "systrap_fast_path", v)
	}},
	{"runtime", "default_runtime", func(c *Config) error {
		c.DefaultRuntime, c.Runtime = c.Runtime, ""
		return nil
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
		if pathValue(node, a.new) != nil {
			return fmt.Errorf("%s is deprecated and %s is set too; keep only %s", a.old, a.new, a.new)
		}
		if err := a.move(c); err != nil {
			return err
		}
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
