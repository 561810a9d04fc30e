package runtimetest_test

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimesuite"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
)

// TestContract runs the runtime contract on the in-process runtime: it
// isolates nothing (its processes are the test's, on the host's
// filesystem) and enforces no limit, so those parts of the suite do not
// apply; everything else does.
func TestContract(t *testing.T) {
	runtimesuite.Run(t, func(t *testing.T) runtimesuite.Backend {
		r := runtimetest.New(t)
		return runtimesuite.Backend{
			Runtime: r,
			Restart: func(*testing.T) runtime.Runtime { return r.Reopen() },
			Crash: func(_ *testing.T, inst runtime.Instance) {
				inst.(*runtimetest.Instance).Die(runtime.End{Cause: runtime.CauseExited, Detail: "the agent was killed"})
			},
			Gone: func(t *testing.T, id string) {
				if inst := r.Instance(id); inst != nil && !inst.Ended() {
					t.Errorf("sandbox %s is still running", id)
				}
			},
			Scratch: t.TempDir(),
		}
	})
}
