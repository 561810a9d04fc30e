package sandbox

import (
	"errors"
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestTransitions(t *testing.T) {
	allowed := map[[2]State]bool{
		{Booting, Pooled}: true, {Booting, Running}: true, {Booting, Stopping}: true,
		{Pooled, Running}: true, {Pooled, Stopping}: true,
		{Running, Pausing}: true, {Running, Checkpointing}: true, {Running, Stopping}: true,
		{Pausing, Paused}: true, {Pausing, Running}: true, {Pausing, Stopping}: true,
		{Paused, Resuming}: true, {Paused, Checkpointing}: true, {Paused, Stopping}: true,
		{Resuming, Running}: true, {Resuming, Paused}: true, {Resuming, Stopping}: true,
		{Checkpointing, Running}: true, {Checkpointing, Paused}: true, {Checkpointing, Stopping}: true,
		{Stopping, Stopped}: true,
	}
	for from := Booting; from <= Stopped; from++ {
		for to := Booting; to <= Stopped; to++ {
			sb := &sandbox{state: from, changed: make(chan struct{})}
			changed := sb.changed
			err := sb.transition(to)
			if want := allowed[[2]State{from, to}]; want != (err == nil) {
				t.Errorf("%s → %s: %v, want allowed=%v", from, to, err, want)
				continue
			}
			if err != nil {
				var se *StateError
				if !errors.As(err, &se) || se.From != from || se.To != to || sb.state != from {
					t.Errorf("%s → %s refused with %v, state %s; want a StateError and no change", from, to, err, sb.state)
				}
				continue
			}
			select {
			case <-changed:
			default:
				t.Errorf("%s → %s did not wake the watcher", from, to)
			}
		}
	}
}

func TestFinishKeepsTheFirstEnd(t *testing.T) {
	for st := Booting; st < Stopping; st++ {
		sb := &sandbox{state: st, changed: make(chan struct{})}
		first := runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory\x1b[2J"}
		kept, was, ok := sb.finish(first, nil)
		if !ok || was != st || kept.Detail != `out of memory\x1b[2J` || sb.state != Stopping {
			t.Errorf("finish from %s = %+v, %s, %v; state %s", st, kept, was, ok, sb.state)
		}
		if kept, _, ok := sb.finish(endRequest, nil); ok || kept.Cause != runtime.CauseOutOfMemory {
			t.Errorf("a second finish from %s = %+v, %v; want the first end kept", st, kept, ok)
		}
	}
}

func TestDeathOfAReplacedOrQuiescedInstance(t *testing.T) {
	inst := &struct{ runtime.Instance }{}
	for _, tt := range []struct {
		name  string
		state State
		d     *death
		ends  bool
	}{
		{"running, its own instance", Running, &death{inst: inst}, true},
		{"running, a replaced instance", Running, &death{inst: &struct{ runtime.Instance }{}}, false},
		{"pausing", Pausing, &death{inst: inst}, false},
		{"checkpointing", Checkpointing, &death{inst: inst}, false},
	} {
		sb := &sandbox{state: tt.state, inst: inst, changed: make(chan struct{})}
		if _, _, ok := sb.finish(endAgentGone, tt.d); ok != tt.ends {
			t.Errorf("%s: ended = %v, want %v", tt.name, ok, tt.ends)
		}
	}
}
