package gvisor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestRegistered(t *testing.T) {
	if !slices.Contains(runtime.Names(), "gvisor") {
		t.Fatalf("runtime.Names() = %v, want gvisor among them", runtime.Names())
	}
}

func TestNewChecksHost(t *testing.T) {
	testutil.RequiresRoot(t)
	notExec := filepath.Join(t.TempDir(), "runsc")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts runtime.Options
	}{
		{"no state dir", runtime.Options{Settings: runscSettings(testutil.RunscPath())}},
		{"missing runsc", runtime.Options{StateDir: t.TempDir(), Settings: runscSettings("/nonexistent/runsc")}},
		{"runsc not executable", runtime.Options{StateDir: t.TempDir(), Settings: runscSettings(notExec)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := runtime.New("gvisor", tt.opts); err == nil {
				t.Fatal("New: want an error")
			}
		})
	}
}

func TestStartRoundTrip(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	a := startAgent(t, r, spec)

	if got := a.must("echo hello sandbox"); got != "hello sandbox" {
		t.Errorf("echo: got %q", got)
	}
	if got := a.must("hostname"); got != "hutch-test" {
		t.Errorf("hostname: got %q", got)
	}
	if got := a.must("pid"); got != "1" {
		t.Errorf("agent pid: got %q, want 1", got)
	}
	// The memory limit is what the sandbox sees as its RAM.
	if got := a.must("read /proc/meminfo"); !strings.Contains(got, "MemTotal:") || !strings.Contains(got, strconv.Itoa(256*1024)+" kB") {
		t.Errorf("meminfo does not show the 256 MiB limit: %.120s", got)
	}
	// The agent binary is mounted read-only.
	if got := a.must("write " + runtime.AgentPath + " x"); !strings.HasPrefix(got, "err:") {
		t.Errorf("writing the agent binary: got %q, want an error", got)
	}
	select {
	case <-a.inst.Done():
		t.Fatal("Done closed while the sandbox runs")
	default:
	}
	if reason := a.inst.Exit(); reason.Ended() {
		t.Errorf("Exit while running = %q", reason)
	}
}

func TestStartVariants(t *testing.T) {
	r := newTestRuntime(t)
	rootfs := testRootfs(t, true)
	svc := testNetwork(t)
	tests := []struct {
		name string
		edit func(*runtime.Spec)
	}{
		{"network", func(s *runtime.Spec) { attach(t, svc, s) }},
		{"no limits", func(s *runtime.Spec) { s.CPUs, s.MemoryMB, s.PidsLimit = 0, 0, 0 }},
		{"default hostname", func(s *runtime.Spec) { s.Hostname = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t, rootfs)
			tt.edit(&spec)
			a := startAgent(t, r, spec)
			if got := a.must("echo " + tt.name); got != tt.name {
				t.Errorf("echo: %q", got)
			}
			if spec.Hostname == "" {
				if got := a.must("hostname"); got != spec.ID[:12] {
					t.Errorf("hostname = %q, want %q", got, spec.ID[:12])
				}
			}
		})
	}
}

func TestDebugLogs(t *testing.T) {
	testutil.RequiresIntegration(t)
	stateDir := t.TempDir()
	r, err := newRuntime(runtime.Options{StateDir: stateDir, Settings: json.RawMessage(`{"debug": true, "runsc_path": "` + testutil.RunscPath() + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, testRootfs(t, true))
	a := startAgent(t, r, spec)
	a.must("echo up")
	if err := a.inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(r.logDir(spec.ID), "runsc.log.*"))
	if len(logs) < 3 { // run, gofer, boot, delete
		t.Errorf("debug logs after Destroy: %v, want runsc's debug logs kept", logs)
	}
}

func TestBootTime(t *testing.T) {
	r := newTestRuntime(t)
	rootfs := testRootfs(t, true)
	var times []time.Duration
	for range 5 {
		spec := testSpec(t, rootfs)
		start := time.Now()
		inst, err := r.Start(context.Background(), spec)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		a := &agent{t: t, inst: inst}
		a.rd = newLineReader(inst)
		a.must("echo ready")
		times = append(times, time.Since(start))
		if err := inst.Destroy(context.Background()); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		assertGone(t, r, spec.ID)
	}
	sorted := slices.Clone(times)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("Start → first answer: median %v (all %v)", sorted[len(sorted)/2], times)
}

func TestOverlayKeepsImageUntouched(t *testing.T) {
	r := newTestRuntime(t)
	rootfs := testRootfs(t, true)
	a := startAgent(t, r, testSpec(t, rootfs))
	b := startAgent(t, r, testSpec(t, rootfs))

	for _, p := range []string{"/usr/x", "/usr/bin/new", "/etc/passwd", "/bin/extra"} {
		if got := a.must("write " + p + " from-a"); got != "ok" {
			t.Fatalf("write %s inside: %q", p, got)
		}
		if got := a.must("read " + p); got != "from-a" {
			t.Errorf("read back %s inside: %q", p, got)
		}
		if _, err := os.Stat(filepath.Join(rootfs, p)); !os.IsNotExist(err) {
			t.Errorf("%s reached the host image (stat err %v)", p, err)
		}
		if got := b.must("read " + p); !strings.HasPrefix(got, "err:") {
			t.Errorf("second sandbox sees %s: %q", p, got)
		}
	}
	// The bundle's rootfs is a read-only bind mount.
	if err := os.WriteFile(filepath.Join(r.sandboxDir(a.inst.(*instance).id), "rootfs", "host-write"), nil, 0o644); err == nil {
		t.Error("writing through the bundle's rootfs mount succeeded; want EROFS")
	}
}

func TestMissingAgentMountPoint(t *testing.T) {
	// runsc's gofer cannot create the mount point in the read-only rootfs
	// ("failed to safely mount"), so Start refuses such an image up front.
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, false))
	_, err := r.Start(context.Background(), spec)
	if !errdefs.Is(err, errdefs.CodeBootFailed) || !strings.Contains(err.Error(), runtime.AgentPath) {
		t.Fatalf("Start without %s in the image: %v; want %s naming it", runtime.AgentPath, err, errdefs.CodeBootFailed)
	}
	assertGone(t, r, spec.ID)
}

func TestMemoryLimitEndsSandbox(t *testing.T) {
	r := newTestRuntime(t)
	rootfs := testRootfs(t, true)
	spec := testSpec(t, rootfs)
	spec.MemoryMB = 64
	a := startAgent(t, r, spec)
	other := startAgent(t, r, testSpec(t, rootfs))

	if got := a.must("alloc 8"); got != "ok 8" {
		t.Fatalf("alloc under the limit: %q", got)
	}
	// The answer never comes: the Sentry is killed by the OOM killer.
	if ans, err := a.ask("alloc 256", 30*time.Second); err == nil {
		t.Fatalf("alloc 256 MiB under a 64 MiB limit answered %q", ans)
	}
	waitDone(t, a.inst, 10*time.Second)
	if got, want := a.inst.Exit(), (runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory (limit 64 MiB)"}); got != want {
		t.Errorf("Exit = %+v, want %+v", got, want)
	}
	if got := other.must("echo still here"); got != "still here" {
		t.Errorf("other sandbox: %q", got)
	}
	if err := a.inst.Destroy(context.Background()); err != nil {
		t.Errorf("Destroy after OOM: %v", err)
	}
	if got := a.inst.Exit().Detail; !strings.HasPrefix(got, "out of memory") {
		t.Errorf("Exit after Destroy = %q", got)
	}
}

func TestAgentExitEndsSandbox(t *testing.T) {
	r := newTestRuntime(t)
	a := startAgent(t, r, testSpec(t, testRootfs(t, true)))
	if _, err := a.ask("exit", 2*time.Second); err == nil {
		t.Fatal("exit answered")
	}
	waitDone(t, a.inst, 10*time.Second)
	if got := a.inst.Exit().Detail; !strings.HasPrefix(got, "sandbox exited unexpectedly") {
		t.Errorf("Exit = %q", got)
	}
}

func TestEndSeenWithoutReader(t *testing.T) {
	// Nobody reads Conn: the end is noticed through the stderr pipe.
	r := newTestRuntime(t)
	a := startAgent(t, r, testSpec(t, testRootfs(t, true)))
	a.must("echo up")
	id := a.inst.(*instance).id
	for _, pid := range r.sandboxProcesses(id) {
		if err := killPid(pid); err != nil {
			t.Fatal(err)
		}
	}
	waitDone(t, a.inst, 10*time.Second)
	if got := a.inst.Exit().Detail; !strings.HasPrefix(got, "sandbox exited unexpectedly") {
		t.Errorf("Exit = %q", got)
	}
}

func TestDestroy(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	inst, err := r.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, inst: inst, rd: newLineReader(inst)}
	a.must("echo up")

	// A cancelled context does not stop Destroy.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	assertGone(t, r, spec.ID)
	select {
	case <-inst.Done():
	default:
		t.Error("Done not closed after Destroy")
	}
	if got := inst.Exit(); got.Ended() {
		t.Errorf("Exit after Destroy = %q, want empty", got)
	}
	if err := inst.Destroy(context.Background()); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if _, err := a.ask("echo gone", 2*time.Second); err == nil {
		t.Error("agent answered after Destroy")
	}
}

func TestBadAgentPath(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	spec.AgentPath = "/nonexistent/hutch-agent"
	inst, err := r.Start(context.Background(), spec)
	if err == nil {
		inst.Destroy(context.Background())
		t.Fatal("Start with a missing agent succeeded")
	}
	if !errdefs.Is(err, errdefs.CodeBootFailed) {
		t.Errorf("error code = %s, want %s: %v", errdefs.CodeOf(err), errdefs.CodeBootFailed, err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/hutch-agent") {
		t.Errorf("error does not carry runsc's stderr: %v", err)
	}
	t.Logf("boot error: %v", err)
	assertGone(t, r, spec.ID)
}

func TestBadRootfs(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	spec.Image.Path = filepath.Join(t.TempDir(), "missing")
	if _, err := r.Start(context.Background(), spec); !errdefs.Is(err, errdefs.CodeBootFailed) {
		t.Fatalf("Start with a missing rootfs: %v, want %s", err, errdefs.CodeBootFailed)
	}
	assertGone(t, r, spec.ID)
}

func TestStartCancelled(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Start(ctx, spec); err == nil {
		t.Fatal("Start with a cancelled context succeeded")
	}
	assertGone(t, r, spec.ID)
}

func TestReconcileAfterCrash(t *testing.T) {
	testutil.RequiresIntegration(t)
	stateDir := t.TempDir()
	rootfs := testRootfs(t, true)
	old := runtimeAt(t, stateDir)
	start := func(spec runtime.Spec) *agent {
		inst, err := old.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		a := &agent{t: t, inst: inst, rd: newLineReader(inst)}
		a.must("echo up")
		return a
	}
	exited, running, kept := testSpec(t, rootfs), testSpec(t, rootfs), testSpec(t, rootfs)
	exitedAgent, runningAgent, keptAgent := start(exited), start(running), start(kept)
	// The daemon dies: its pipe ends close, the agent sees EOF on stdin and
	// exits, but runsc state, mounts, cgroups and directories remain. The
	// second orphan is still running.
	exitedAgent.inst.Conn().Close()
	waitGoneProcesses(t, old, exited.ID)

	// A new daemon over the same state directory.
	fresh := runtimeAt(t, stateDir)
	keep := func(id string) bool { return id == kept.ID }
	ids, err := fresh.Reconcile(context.Background(), keep)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	want := []string{exited.ID, running.ID}
	sort.Strings(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("Reconcile destroyed %v, want %v", ids, want)
	}
	assertGone(t, fresh, exited.ID)
	assertGone(t, fresh, running.ID)
	if got := keptAgent.must("echo kept"); got != "kept" {
		t.Errorf("kept sandbox: %q", got)
	}
	// The old runtime's handle sees its sandbox end and copes with it
	// being gone.
	waitDone(t, runningAgent.inst, 10*time.Second)
	if ids, err := fresh.Reconcile(context.Background(), keep); err != nil || len(ids) != 0 {
		t.Errorf("second Reconcile = %v, %v; want nothing", ids, err)
	}
	for _, a := range []*agent{exitedAgent, runningAgent, keptAgent} {
		if err := a.inst.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	}
	assertGone(t, fresh, kept.ID)
}

// waitGoneProcesses waits until sandbox id has no host process left.
func waitGoneProcesses(t *testing.T, r *Runtime, id string) {
	t.Helper()
	var left []int
	if !testutil.Poll(time.Minute, func() bool { left = r.sandboxProcesses(id); return len(left) == 0 }) {
		t.Fatalf("sandbox %s still has processes %v", id, left)
	}
}

func TestReconcileLeftovers(t *testing.T) {
	// Leftovers without runsc state: a bundle directory with its rootfs
	// still mounted, as after a crash in the middle of Start or Destroy.
	r := newTestRuntime(t)
	rootfs := testRootfs(t, true)
	id := testSpec(t, rootfs).ID
	mnt := filepath.Join(r.sandboxDir(id), "rootfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := bindReadOnly(rootfs, mnt); err != nil {
		t.Fatal(err)
	}
	ids, err := r.Reconcile(context.Background(), func(string) bool { return false })
	if err != nil || !slices.Equal(ids, []string{id}) {
		t.Fatalf("Reconcile = %v, %v; want [%s]", ids, err, id)
	}
	assertGone(t, r, id)
	if _, err := os.Stat(filepath.Join(rootfs, "bin", "busybox")); err != nil {
		t.Errorf("image damaged by the teardown: %v", err)
	}
}

func TestStats(t *testing.T) {
	r := newTestRuntime(t)
	a := startAgent(t, r, testSpec(t, testRootfs(t, true)))
	a.must("alloc 32")
	sr, ok := a.inst.(runtime.StatsReader)
	if !ok {
		t.Fatal("instance is not a runtime.StatsReader")
	}
	s, err := sr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", s)
	if s.CPUSeconds <= 0 || s.CPUSeconds > 60 {
		t.Errorf("CPUSeconds = %v", s.CPUSeconds)
	}
	if s.MemoryBytes < 32<<20 || s.MemoryBytes > 256<<20 {
		t.Errorf("MemoryBytes = %d, want between 32 MiB and the 256 MiB limit", s.MemoryBytes)
	}
	if s.Pids == 0 || s.Pids > 512 {
		t.Errorf("Pids = %d", s.Pids)
	}
}

func TestPidsLimit(t *testing.T) {
	r := newTestRuntime(t)
	spec := testSpec(t, testRootfs(t, true))
	spec.PidsLimit = 64
	a := startAgent(t, r, spec)
	ans, err := a.ask("spawn 200", 30*time.Second)
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	// pids.max counts host tasks: the Sentry's and gofer's threads (about
	// 23 when idle) plus systrap stubs for every process in the sandbox.
	t.Logf("spawn 200 under pids.max=64: %q", ans)
	n, err := strconv.Atoi(strings.TrimPrefix(ans, "spawned "))
	if err != nil || n >= 200 || n == 0 {
		t.Errorf("spawn answered %q; want some but not all of 200", ans)
	}
	if got := a.must("echo still alive"); got != "still alive" {
		t.Errorf("after hitting the pids limit: %q", got)
	}
}
