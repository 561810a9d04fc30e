package sandbox

import (
	"fmt"
	"slices"
)

// State is where a sandbox is in its life. Every change goes through
// sandbox.transition, which checks it against transitions under the
// sandbox's lock.
type State int

// The states of a sandbox.
const (
	// Booting: the runtime is starting it and the agent is not yet ready.
	Booting State = iota
	// Pooled: booted ahead of demand, waiting in the warm pool; it has no
	// owner, is not listed, not reaped and not in the metadata store.
	Pooled
	// Running: an owner's sandbox that takes calls.
	Running
	// Pausing: being frozen; its agent stream may close meanwhile.
	Pausing
	// Paused: frozen; it takes no calls until resumed.
	Paused
	// Resuming: being thawed or restored; its instance and agent
	// connection may be replaced meanwhile.
	Resuming
	// Checkpointing: its state is being saved; its agent stream may close
	// meanwhile.
	Checkpointing
	// Stopping: it has ended (its End is set) and is being torn down.
	Stopping
	// Stopped: torn down; only its record is left.
	Stopped
)

var stateNames = [...]string{"booting", "pooled", "running", "pausing", "paused", "resuming", "checkpointing", "stopping", "stopped"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("state(%d)", int(s))
	}
	return stateNames[s]
}

// transitions lists the states each state may move to. Any state but
// Stopped may end (Stopping); only Stopping leads to Stopped.
var transitions = map[State][]State{
	Booting:       {Pooled, Running, Stopping},
	Pooled:        {Running, Stopping},
	Running:       {Pausing, Checkpointing, Stopping},
	Pausing:       {Paused, Running, Stopping},
	Paused:        {Resuming, Checkpointing, Stopping},
	Resuming:      {Running, Paused, Stopping},
	Checkpointing: {Running, Paused, Stopping},
	Stopping:      {Stopped},
	Stopped:       nil,
}

// canMove reports whether from may move to to.
func canMove(from, to State) bool { return slices.Contains(transitions[from], to) }

// ended reports whether s is Stopping or Stopped: the sandbox has an End
// and takes no calls.
func (s State) ended() bool { return s == Stopping || s == Stopped }

// quiesced reports whether s is a state in which the agent's stream may
// close without the sandbox dying: a pause or checkpoint under way, or a
// pause, decides what happens next.
func (s State) quiesced() bool {
	return s == Pausing || s == Paused || s == Checkpointing || s == Resuming
}

// StateError is a transition the table does not allow.
type StateError struct {
	From, To State
}

func (e *StateError) Error() string {
	return fmt.Sprintf("a %s sandbox cannot become %s", e.From, e.To)
}
