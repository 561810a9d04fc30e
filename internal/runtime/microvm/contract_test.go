package microvm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimesuite"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestContract runs the runtime contract on the microVM runtime with the
// real agent (integration: HUTCH_TEST_RUNTIMES names microvm; TCG where
// there is no KVM).
func TestContract(t *testing.T) {
	testutil.RequiresRuntime(t, "microvm")
	runtimesuite.Run(t, func(t *testing.T) runtimesuite.Backend {
		stateDir := t.TempDir()
		open := func(t *testing.T) *Runtime {
			r, err := newRuntime(runtime.Options{StateDir: stateDir}, slog.Default())
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() {
				if _, err := r.Reconcile(context.Background(), func(string) bool { return false }); err != nil {
					t.Errorf("cleanup Reconcile: %v", err)
				}
			})
			return r
		}
		r := open(t)
		t.Logf("accelerator %s", r.Accel())
		art, err := r.Prepare(context.Background(), runtime.ImageRef{ID: "contract", Rootfs: runtimesuite.Rootfs(t)})
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		return runtimesuite.Backend{
			Runtime: r,
			Restart: func(t *testing.T) runtime.Runtime { return open(t) },
			Crash: func(t *testing.T, inst runtime.Instance) {
				if err := syscall.Kill(inst.(*instance).cmd.Process.Pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			},
			Gone:      func(t *testing.T, id string) { assertVMGone(t, r, id) },
			Image:     art,
			AgentPath: testutil.BuildBinary(t, "./cmd/hutch-agent"),
			Isolated:  true,
			Measures:  true,
			Limits:    runtimesuite.Limits{Memory: true, OOMKilled: true, Pids: true, Disk: true},
		}
	})
}

// assertVMGone fails t if anything of sandbox id is left: its directory,
// a process running in it.
func assertVMGone(t *testing.T, r *Runtime, id string) {
	t.Helper()
	dir := r.sandboxDir(id)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("sandbox %s: directory left (%v)", id, err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && cwd == dir {
			t.Errorf("sandbox %s: process %s left in its directory", id, filepath.Base(filepath.Dir(p)))
		}
	}
}
