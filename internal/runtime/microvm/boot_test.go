package microvm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimesuite"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// busyboxImage is the runtime suite's image (runtimesuite.Rootfs).
func busyboxImage(t *testing.T) runtime.ImageRef {
	t.Helper()
	return runtime.ImageRef{ID: "busybox-test", Rootfs: runtimesuite.Rootfs(t)}
}

// TestBootExecStop boots a VM (TCG here) and checks what is the microVM's
// own, beyond the runtime contract (TestContract: exec, limits, pause,
// stats, crash, reconcile): the image's disk is prepared once, PID 1 is
// the guest's init, each process runs in a cgroup of its own under the
// sandbox's pids cgroup and its cgroup goes with it, the OOM kill of a
// shell's child is reported, and QEMU's monitor shows a pause.
func TestBootExecStop(t *testing.T) {
	testutil.RequiresRuntime(t, "microvm")
	ctx := context.Background()
	state := t.TempDir()
	r, err := newRuntime(runtime.Options{StateDir: state}, slog.Default())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	img := busyboxImage(t)
	art, err := r.Prepare(ctx, img)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if again, err := r.Prepare(ctx, img); err != nil || again != art {
		t.Errorf("second Prepare = %+v, %v; want the cached %+v", again, err, art)
	}
	spec := runtime.Spec{ID: uuid.NewString(), Image: art, AgentPath: testutil.BuildBinary(t, "./cmd/hutch-agent"), CPUs: 1, MemoryMB: 256, Hostname: "vmtest", WritableLayerMB: 32, PidsLimit: 64}
	start := time.Now()
	inst, err := r.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = inst.Destroy(context.Background()) })
	c, err := agentclient.Dial(inst.Conn(), agentclient.Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(readyCtx); err != nil {
		t.Fatalf("WaitReady: %v\nconsole:\n%s", err, inst.StderrTail())
	}
	t.Logf("agent ready %v after Start (accel %s)", time.Since(start).Round(time.Millisecond), r.Accel())

	resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"cat", "/proc/1/comm"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if err != nil || string(resp.GetStdout()) != "init\n" {
		t.Errorf("PID 1: %q, %v (stderr %q)", resp.GetStdout(), err, resp.GetStderr())
	}
	// The sandbox's processes are born into cgroups of their own under a
	// pids cgroup of PidsLimit (the agent is not in it).
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "cat /proc/self/cgroup /sys/fs/cgroup/sandbox/pids.max"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if out := string(resp.GetStdout()); err != nil || !strings.HasPrefix(out, "0::/sandbox/p") || !strings.HasSuffix(out, "\n64\n") {
		t.Errorf("the sandbox's processes in a cgroup of pids.max 64: %q, stderr %q, %v", resp.GetStdout(), resp.GetStderr(), err)
	}
	// A shell whose child the guest's OOM killer picks ends with 137 and
	// says so: the kill is seen in the process's whole cgroup.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", `awk 'BEGIN { s = sprintf("%65536s", ""); while (1) { s = s s; a[i++] = s } }'`}, Env: []string{"PATH=/bin"}, TimeoutMs: 120000})
	if err != nil || resp.GetExitCode() != 137 || !resp.GetOomKilled() {
		t.Errorf("sh running awk out of memory: exit %d, oom_killed %v, stderr %q, %v", resp.GetExitCode(), resp.GetOomKilled(), resp.GetStderr(), err)
	}
	// The processes' cgroups go with them: only this exec's is left.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "cd /sys/fs/cgroup/sandbox && ls -d p[0-9]*; cat /proc/self/cgroup"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if f := strings.Fields(string(resp.GetStdout())); err != nil || len(f) != 2 || f[1] != "0::/sandbox/"+f[0] {
		t.Errorf("cgroups left: %q, %v", resp.GetStdout(), err)
	}

	// QEMU's monitor says paused, then running.
	if err := inst.(runtime.Pauser).Pause(ctx); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if st, err := inst.(*instance).status(ctx); err != nil || st != "paused" {
		t.Errorf("status after Pause = %q, %v; want paused", st, err)
	}
	if err := inst.(runtime.Pauser).Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if st, err := inst.(*instance).status(ctx); err != nil || st != "running" {
		t.Errorf("status after Resume = %q, %v; want running", st, err)
	}
	// The writable layer is a disk of its own in the sandbox's directory.
	if _, err := os.Stat(filepath.Join(r.sandboxDir(spec.ID), rwDiskName)); err != nil {
		t.Errorf("no writable disk: %v", err)
	}
	// QEMU runs in a host cgroup with the VM's limits (issue 38: 5).
	checkQEMUCgroup(t, r, inst.(*instance).cmd.Process.Pid, spec)
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	assertVMGone(t, r, spec.ID)
	if r.cg.Exists(cgroupRel(spec.ID)) {
		t.Errorf("QEMU's cgroup %s is left after Destroy", cgroupRel(spec.ID))
	}
}

// checkQEMUCgroup checks that QEMU (pid) is in cgroup hutch/<id> of every
// controller, with memory (guest plus overhead, no swap), cpu and pids
// limits.
func checkQEMUCgroup(t *testing.T, r *Runtime, pid int, spec runtime.Spec) {
	t.Helper()
	rel := cgroupRel(spec.ID)
	read := func(ctrl, v1, v2 string) string {
		name := v1
		if r.cg.V2 {
			name = v2
		}
		b, err := os.ReadFile(filepath.Join(r.cg.Path(ctrl, rel), name))
		if err != nil {
			t.Errorf("cgroup %s: %v", rel, err)
		}
		return strings.TrimSpace(string(b))
	}
	mem := strconv.Itoa(int(spec.MemoryMB+qemuOverheadMB) << 20)
	want := map[string][2]string{
		"memory": {read("memory", "memory.limit_in_bytes", "memory.max"), mem},
		"cpu":    {read("cpu", "cpu.cfs_quota_us", "cpu.max"), map[bool]string{false: "100000", true: "100000 100000"}[r.cg.V2]},
		"pids":   {read("pids", "pids.max", "pids.max"), strconv.Itoa(qemuTasks + 1)},
	}
	for ctrl, gw := range want {
		if gw[0] != gw[1] {
			t.Errorf("QEMU's %s limit: %q, want %q", ctrl, gw[0], gw[1])
		}
		if procs := read(ctrl, "cgroup.procs", "cgroup.procs"); !slices.Contains(strings.Fields(procs), strconv.Itoa(pid)) {
			t.Errorf("QEMU (%d) is not in its %s cgroup: %q", pid, ctrl, procs)
		}
	}
}
