package microvm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// busyboxImage makes a minimal image directory (<dir>/rootfs): busybox
// and the agent's mount point.
func busyboxImage(t *testing.T) runtime.ImageRef {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "etc", "tmp", "proc", "dev", "sys", ".hutch"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(testutil.RequiresBinary(t, "/bin/busybox"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "echo", "cat", "sleep", "ls", "dd", "hostname", "awk", "seq", "true", "wc"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, runtime.AgentPath), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return runtime.ImageRef{ID: "busybox-test", Rootfs: root}
}

// TestBootExecStop boots a VM (TCG here), runs echo through its agent and
// stops it, leaving nothing behind.
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

	for i := 0; i < 5; i++ {
		t0 := time.Now()
		resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"echo", "hi"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
		if err != nil {
			t.Fatalf("Exec: %v\nconsole:\n%s", err, inst.StderrTail())
		}
		if string(resp.GetStdout()) != "hi\n" || resp.GetExitCode() != 0 {
			t.Fatalf("echo hi: stdout %q, exit %d", resp.GetStdout(), resp.GetExitCode())
		}
		t.Logf("exec echo round trip %v", time.Since(t0).Round(time.Microsecond))
	}
	resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "hostname; echo x > /etc/w && cat /etc/w; cat /proc/1/comm"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if err != nil || string(resp.GetStdout()) != "vmtest\nx\ninit\n" {
		t.Errorf("hostname, a write to the root and PID 1: %q, %v (stderr %q)", resp.GetStdout(), err, resp.GetStderr())
	}

	// The task limit holds inside: the sandbox's processes are born into
	// cgroups of their own under a pids cgroup (the agent is not in it);
	// forks past it fail, the VM and the agent go on.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "cat /proc/self/cgroup /sys/fs/cgroup/sandbox/pids.max; for i in $(seq 100); do sleep 1 >/dev/null 2>&1 & done 2>/dev/null; wait; echo forked"}, Env: []string{"PATH=/bin"}, TimeoutMs: 60000})
	if out := string(resp.GetStdout()); err != nil || !strings.HasPrefix(out, "0::/sandbox/p") || !strings.Contains(out, "\n64\n") {
		t.Errorf("the sandbox's processes in a cgroup of pids.max 64: %q, stderr %q, %v", resp.GetStdout(), resp.GetStderr(), err)
	}
	t.Logf("100 forks under a limit of 64: exit %d, stdout %q, stderr %q", resp.GetExitCode(), resp.GetStdout(), resp.GetStderr())
	// Orphaned sleeps may hold the limit a moment longer (the agent reaps
	// them as they end); then execs start again.
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"true"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
		return err
	}, "an exec starts after the fork test")

	// Out of memory inside ends the process (the guest's OOM killer, which
	// never picks PID 1), not the VM, and says so: awk doubles a string,
	// keeping every copy, until it is killed.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"awk", `BEGIN { s = sprintf("%65536s", ""); while (1) { s = s s; a[i++] = s } }`}, Env: []string{"PATH=/bin"}, TimeoutMs: 120000})
	if err != nil || resp.GetExitCode() != 137 || resp.GetTimedOut() || !resp.GetOomKilled() {
		t.Errorf("awk filling a 256 MiB VM: exit %d (exited %v, timed out %v, oom_killed %v), stderr %q, %v", resp.GetExitCode(), resp.GetExited(), resp.GetTimedOut(), resp.GetOomKilled(), resp.GetStderr(), err)
	}
	t.Logf("out of memory: exit %d, exited %v, oom_killed %v, stderr %q", resp.GetExitCode(), resp.GetExited(), resp.GetOomKilled(), resp.GetStderr())
	// A shell whose child the OOM killer picks ends with 137 too.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", `awk 'BEGIN { s = sprintf("%65536s", ""); while (1) { s = s s; a[i++] = s } }'`}, Env: []string{"PATH=/bin"}, TimeoutMs: 120000})
	if err != nil || resp.GetExitCode() != 137 || !resp.GetOomKilled() {
		t.Errorf("sh running awk out of memory: exit %d, oom_killed %v, stderr %q, %v", resp.GetExitCode(), resp.GetOomKilled(), resp.GetStderr(), err)
	}
	// A kill -9 is not an OOM kill, whether it ends an exec or a
	// background process.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $$"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if err != nil || resp.GetExitCode() != 137 || resp.GetOomKilled() {
		t.Errorf("kill -9: exit %d, oom_killed %v, %v", resp.GetExitCode(), resp.GetOomKilled(), err)
	}
	bg, err := c.Start(ctx, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sleep", "600"}, Env: []string{"PATH=/bin"}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := bg.Recv(); err != nil || bg.Pid() == 0 {
		t.Fatalf("the background process's start: pid %d, %v", bg.Pid(), err)
	}
	bgPid := bg.Pid()
	bg.Close()
	if err := c.Signal(ctx, bgPid, syscall.SIGKILL); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if e, err := c.Wait(ctx, bgPid); err != nil || e.GetExitCode() != 137 || e.GetOomKilled() {
		t.Errorf("background process killed by SIGKILL: %v, %v; want exit 137, not oom_killed", e, err)
	}
	// The processes' cgroups go with them: only this exec's is left.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "cd /sys/fs/cgroup/sandbox && ls -d p[0-9]*; cat /proc/self/cgroup"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000})
	if f := strings.Fields(string(resp.GetStdout())); err != nil || len(f) != 2 || f[1] != "0::/sandbox/"+f[0] {
		t.Errorf("cgroups left: %q, %v", resp.GetStdout(), err)
	}
	if resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"echo", "alive"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000}); err != nil || string(resp.GetStdout()) != "alive\n" {
		t.Errorf("exec after an out-of-memory kill: %q, %v\n%s", resp.GetStdout(), err, inst.StderrTail())
	}

	// Pause freezes the VM; Resume thaws it, processes and session intact.
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
	if resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"cat", "/etc/w"}, Env: []string{"PATH=/bin"}, TimeoutMs: 30000}); err != nil || string(resp.GetStdout()) != "x\n" {
		t.Errorf("exec after Resume: %q, %v", resp.GetStdout(), err)
	}

	// The writable layer is a disk of WritableLayerMB: past it, ENOSPC.
	resp, err = c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"dd", "if=/dev/zero", "of=/big", "bs=1M", "count=64"}, Env: []string{"PATH=/bin"}, TimeoutMs: 60000})
	if err != nil || resp.GetExitCode() == 0 || !strings.Contains(string(resp.GetStderr()), "No space left") {
		t.Errorf("writing 64 MiB to a 32 MiB writable layer: exit %d, stderr %q, %v", resp.GetExitCode(), resp.GetStderr(), err)
	}
	if _, err := os.Stat(filepath.Join(r.sandboxDir(spec.ID), rwDiskName)); err != nil {
		t.Errorf("no writable disk: %v", err)
	}
	if st, err := inst.(runtime.StatsReader).Stats(); err != nil || st.CPUSeconds <= 0 || st.MemoryBytes == 0 || st.DiskBytes < 16<<20 {
		t.Errorf("Stats = %+v, %v; want CPU time, memory and the written disk", st, err)
	} else {
		t.Logf("stats: %+v", st)
	}

	pid := inst.(*instance).cmd.Process.Pid
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if processExists(pid) {
		t.Errorf("qemu %d still runs after Destroy", pid)
	}
	if _, err := os.Stat(r.sandboxDir(spec.ID)); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left: %v", err)
	}
	if ids, err := r.Reconcile(ctx, func(string) bool { return false }); err != nil || len(ids) != 0 {
		t.Errorf("Reconcile after Destroy = %v, %v; want nothing", ids, err)
	}
}
