package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Set is the runtimes one daemon offers: those that started on this host,
// with their abilities, the default among them (what a create that names
// none gets), and why the others could not start.
type Set struct {
	def       string
	ready     map[string]Runtime
	abilities map[string]Abilities
	// down maps the runtimes that could not start to why.
	down map[string]string
}

// ErrUnknownRuntime is the error of a name no runtime is registered by.
var ErrUnknownRuntime = errors.New("unknown runtime")

// ErrRuntimeUnavailable is the error of a runtime this host cannot run.
var ErrRuntimeUnavailable = errors.New("runtime not available on this host")

// NewSet is the set of ready runtimes, whose default is def (one of them),
// and of those that are down with why.
func NewSet(def string, ready []Runtime, down map[string]string) (*Set, error) {
	s := &Set{def: def, ready: map[string]Runtime{}, abilities: map[string]Abilities{}, down: maps.Clone(down)}
	if s.down == nil {
		s.down = map[string]string{}
	}
	for _, rt := range ready {
		s.ready[rt.Name()] = rt
		s.abilities[rt.Name()] = AbilitiesOf(rt)
	}
	if _, ok := s.ready[def]; !ok {
		return nil, fmt.Errorf("the default runtime %q is not among the ready ones", def)
	}
	return s, nil
}

// Single is the set of one ready runtime, its default.
func Single(rt Runtime) *Set {
	s, _ := NewSet(rt.Name(), []Runtime{rt}, nil)
	return s
}

// Default is the runtime of creates that name none.
func (s *Set) Default() Runtime { return s.ready[s.def] }

// Get is the ready runtime named name ("" is the default): an error
// wrapping ErrUnknownRuntime for a name no runtime has, or
// ErrRuntimeUnavailable (with why) for one this host cannot run.
func (s *Set) Get(name string) (Runtime, error) {
	if name == "" {
		return s.Default(), nil
	}
	if rt, ok := s.ready[name]; ok {
		return rt, nil
	}
	if why, ok := s.down[name]; ok {
		return nil, fmt.Errorf("%w: %s: %s", ErrRuntimeUnavailable, name, why)
	}
	return nil, fmt.Errorf("%w %q (this daemon offers %s)", ErrUnknownRuntime, name, strings.Join(s.Names(), ", "))
}

// Abilities are the abilities of the ready runtime named name.
func (s *Set) Abilities(name string) Abilities {
	if name == "" {
		name = s.def
	}
	return s.abilities[name]
}

// Names lists the ready runtimes, sorted.
func (s *Set) Names() []string {
	return slices.Sorted(maps.Keys(s.ready))
}

// All lists the ready runtimes, sorted by name.
func (s *Set) All() []Runtime {
	var out []Runtime
	for _, n := range s.Names() {
		out = append(out, s.ready[n])
	}
	return out
}

// Infos describes every runtime of the set, ready or down, sorted by name.
func (s *Set) Infos() []Info {
	var out []Info
	for _, rt := range s.All() {
		i := InfoOf(rt)
		i.Available, i.Default = true, rt.Name() == s.def
		out = append(out, i)
	}
	for _, n := range slices.Sorted(maps.Keys(s.down)) {
		out = append(out, Info{Name: n, Abilities: Abilities{}.String(), Unavailable: s.down[n]})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}
