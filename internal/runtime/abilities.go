package runtime

import (
	"context"
	"strings"

	"github.com/hutch-dev/hutch/api"
)

// Optional abilities. A backend implements those it can, on its Instance
// (or, for Restorer, its Runtime); Abilities sums them up once, so that
// callers can say "this runtime cannot pause" without asserting types at
// every call. Resizer is in resize.go.

// Pauser is an optional Instance ability: freezing every process of a
// running sandbox and thawing it again. While paused, the agent does not
// answer, and its byte stream may stall.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Checkpointer is an optional Instance ability: saving the whole state of
// a running sandbox (memory, processes, writable layer) into dir, an empty
// directory the caller owns. With leaveRunning the sandbox goes on
// running, its agent session untouched; otherwise it ends once its
// checkpoint is written.
type Checkpointer interface {
	Checkpoint(ctx context.Context, dir string, leaveRunning bool) error
}

// Restorer is an optional Runtime ability, the other half of Checkpointer:
// starting a sandbox again from a checkpoint in dir, under spec (whose ID
// may be new; its image, agent and limits the checkpointed sandbox's). The
// instance's Conn is a new session with the agent, relinked as
// agentv1.RelinkSignal says.
type Restorer interface {
	Restore(ctx context.Context, spec Spec, dir string) (Instance, error)
}

// Adopter is an optional Runtime ability: taking over sandbox id, which
// an earlier process (a daemon that restarted) started with Spec.Reattach
// and which still runs. The instance's Conn is a new session with the
// agent, relinked as agentv1.RelinkSignal says. A sandbox that is not
// there, not running or not reattachable is an error, and is left to
// Reconcile (issue 35).
type Adopter interface {
	Adopt(ctx context.Context, id string) (Instance, error)
	// Reattachable says that sandbox id was started with Spec.Reattach.
	Reattachable(id string) bool
}

// LayerCapturer is an optional Instance ability: writing the changes a
// running sandbox made to its root filesystem (its writable layer) to
// path, a file a later Spec.UpperLayer can start a sandbox with.
type LayerCapturer interface {
	CaptureLayer(ctx context.Context, path string) error
}

// Stats is a sandbox's resource use, read from its cgroups.
type Stats struct {
	CPUSeconds  float64 `json:"cpu_seconds"`
	MemoryBytes uint64  `json:"memory_bytes"`
	Pids        uint64  `json:"pids"`
	// DiskBytes is the host space the sandbox's writable layer takes.
	DiskBytes uint64 `json:"disk_bytes"`
}

// StatsReader is an optional Instance ability: live resource use.
type StatsReader interface {
	Stats() (Stats, error)
}

// Abilities says which optional abilities a runtime's sandboxes have.
type Abilities struct {
	// Pause: instances are Pausers.
	Pause bool `json:"pause"`
	// Checkpoint: instances are Checkpointers and the runtime a Restorer.
	Checkpoint bool `json:"checkpoint"`
	// Resize: instances are Resizers.
	Resize bool `json:"resize"`
	// Stats: instances are StatsReaders.
	Stats bool `json:"stats"`
	// Layer: instances are LayerCapturers, and the runtime boots
	// Spec.UpperLayer.
	Layer bool `json:"layer"`
	// Mounts: the runtime boots Spec.Mounts (volumes). No type tells it;
	// a runtime that has it says so after Discover.
	Mounts bool `json:"mounts"`
}

// AbilityReporter is implemented by a Runtime that has optional abilities;
// a runtime without it has none. Implement it with Discover.
type AbilityReporter interface {
	Abilities() Abilities
}

// AbilitiesOf is what rt reports, or no ability. Call it once, at start.
func AbilitiesOf(rt Runtime) Abilities {
	if r, ok := rt.(AbilityReporter); ok {
		return r.Abilities()
	}
	return Abilities{}
}

// Discover works out the abilities of a runtime from its instance type:
// probe is a value of that type (a typed nil is enough, no method is
// called). Backends implement AbilityReporter with it, so that what they
// report cannot drift from what their instances implement.
func Discover(rt Runtime, probe Instance) Abilities {
	_, pause := probe.(Pauser)
	_, checkpoint := probe.(Checkpointer)
	_, restore := rt.(Restorer)
	_, resize := probe.(Resizer)
	_, stats := probe.(StatsReader)
	_, layer := probe.(LayerCapturer)
	return Abilities{Pause: pause, Checkpoint: checkpoint && restore, Resize: resize, Stats: stats, Layer: layer}
}

// String lists the abilities a has ("pause,resize,stats"), or "none".
func (a Abilities) String() string {
	var names []string
	for _, ab := range []struct {
		has  bool
		name string
	}{{a.Pause, "pause"}, {a.Checkpoint, "checkpoint"}, {a.Resize, "resize"}, {a.Stats, "stats"}, {a.Layer, "layer"}, {a.Mounts, "mounts"}} {
		if ab.has {
			names = append(names, ab.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Describer is an optional Runtime ability: how it isolates sandboxes on
// this host, in a word ("systrap" for gVisor's platform, "kvm" or "tcg"
// for the microVM runtime's accelerator).
type Describer interface {
	Mode() string
}

// Info is what a runtime tells about itself, as /healthz and the catalog
// list it: Mode is the Describer's word, Abilities Abilities.String().
type Info = api.RuntimeInfo

// InfoOf is rt's Info.
func InfoOf(rt Runtime) Info {
	i := Info{Name: rt.Name(), Abilities: AbilitiesOf(rt).String()}
	if d, ok := rt.(Describer); ok {
		i.Mode = d.Mode()
	}
	return i
}
