package gvisor

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimesuite"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestContract runs the runtime contract on gVisor with the real agent
// (integration: root and runsc).
func TestContract(t *testing.T) {
	testutil.RequiresIntegration(t)
	runtimesuite.Run(t, func(t *testing.T) runtimesuite.Backend {
		stateDir := t.TempDir()
		r := runtimeAt(t, stateDir)
		img, err := runtime.DirArtifact(runtimesuite.Rootfs(t))
		if err != nil {
			t.Fatal(err)
		}
		return runtimesuite.Backend{
			Runtime: r,
			Restart: func(t *testing.T) runtime.Runtime { return runtimeAt(t, stateDir) },
			Crash: func(t *testing.T, inst runtime.Instance) {
				pids := r.sandboxProcesses(inst.(*instance).id)
				if len(pids) == 0 {
					t.Fatal("the sandbox has no host process to kill")
				}
				for _, pid := range pids {
					if err := killPid(pid); err != nil {
						t.Fatal(err)
					}
				}
			},
			Gone:      func(t *testing.T, id string) { assertGone(t, r, id) },
			Image:     img,
			AgentPath: testutil.BuildBinary(t, "./cmd/hutch-agent"),
			Isolated:  true,
			Measures:  true,
			Limits:    runtimesuite.Limits{Memory: true, Pids: true, Disk: true},
		}
	})
}
