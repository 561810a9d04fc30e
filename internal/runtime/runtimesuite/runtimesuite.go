// Package runtimesuite is the runtime contract as a test suite: what every
// isolation backend (gVisor, the microVM, the in-process test runtime) must
// do, checked through the runtime.Runtime and runtime.Instance interfaces
// and a real agent client, as containerd's snapshotter suite checks its
// snapshotters. A backend's own _test.go calls Run with a Backend:
//
//	func TestContract(t *testing.T) {
//		runtimesuite.Run(t, func(t *testing.T) runtimesuite.Backend { ... })
//	}
//
// The suite boots a sandbox and checks lifecycle (start, agent reachable,
// stop, typed ends), exec semantics (exit codes, stdin, stdout and
// stderr, workdir, env, timeouts, background processes), files, the
// limits the backend claims (memory, pids, writable layer), pause and
// resume, stats, a crash (the sandbox killed from outside), Reconcile of
// a daemon-less leftover, and, for every optional ability the runtime
// does not report, a clear refusal: its instances lack the interface, and
// a Spec that needs the ability is refused with S302 (errdefs
// CodeUnsupported), as the manager's own refusals are.
package runtimesuite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Backend is what a backend's test hands the suite.
type Backend struct {
	// Runtime is the runtime under test, over a state of its own.
	Runtime runtime.Runtime
	// Restart makes another Runtime over the same state, as the next
	// daemon after a crash would: its Reconcile must find and destroy the
	// first one's sandboxes.
	Restart func(t *testing.T) runtime.Runtime
	// Crash ends inst from outside, as the host's OOM killer or an
	// operator's kill -9 of the sandbox's processes would.
	Crash func(t *testing.T, inst runtime.Instance)
	// Gone, when set, fails t if anything of sandbox id is left on the
	// host (processes, mounts, cgroups, directories, networks).
	Gone func(t *testing.T, id string)

	// Image is the artifact every sandbox boots: a busybox root
	// filesystem (Rootfs) as runtime.Prepare made it.
	Image runtime.Artifact
	// AgentPath is the hutch-agent binary.
	AgentPath string
	// Scratch is a writable directory as the sandbox's processes see it;
	// "" is /tmp.
	Scratch string
	// MemoryMB is every sandbox's memory; 0 is 256.
	MemoryMB uint32
	// Timeout bounds a boot and each call; 0 is two minutes.
	Timeout time.Duration

	// Isolated: each sandbox has a root filesystem and host name of its
	// own (a write in one is not seen in another of the same image).
	Isolated bool
	// Measures: Stats reports real use (CPU time and memory above 0).
	Measures bool
	// Limits are the limits of a Spec the runtime enforces.
	Limits Limits
}

// Limits says which limits of a Spec a runtime enforces.
type Limits struct {
	// Memory: a process that allocates past MemoryMB is killed (exit
	// 137) and the sandbox runs on, or the sandbox ends with
	// CauseOutOfMemory.
	Memory bool
	// OOMKilled: a process killed at the memory limit is reported
	// oom_killed (the kernel that killed it is the sandbox's own, as a
	// microVM's guest is; gVisor's Sentry kills it without saying why).
	OOMKilled bool
	// Pids: past PidsLimit, spawns are refused and the sandbox runs on,
	// or the sandbox ends with CausePidsLimit.
	Pids bool
	// Disk: past WritableLayerMB, writes to the root filesystem fail
	// with ENOSPC.
	Disk bool
}

// withDefaults fills b's zero values.
func (b Backend) withDefaults() Backend {
	if b.Scratch == "" {
		b.Scratch = "/tmp"
	}
	if b.MemoryMB == 0 {
		b.MemoryMB = 256
	}
	if b.Timeout == 0 {
		b.Timeout = 2 * time.Minute
	}
	return b
}

// diskMB is the writable layer of the suite's main sandbox.
const diskMB = 32

// Run runs the contract on the backend newBackend makes (once, for t).
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	b := newBackend(t).withDefaults()
	ab := runtime.AbilitiesOf(b.Runtime)
	t.Logf("runtime %s, abilities %s", b.Runtime.Name(), ab)
	t.Run("Refusals", func(t *testing.T) { testRefusals(t, b, ab) })
	t.Run("Sandbox", func(t *testing.T) { testSandbox(t, b, ab) })
	t.Run("Crash", func(t *testing.T) { testCrash(t, b) })
	t.Run("Reconcile", func(t *testing.T) { testReconcile(t, b) })
	if b.Limits.Memory {
		t.Run("MemoryLimit", func(t *testing.T) { testMemoryLimit(t, b) })
	}
	if b.Limits.Pids {
		t.Run("PidsLimit", func(t *testing.T) { testPidsLimit(t, b) })
	}
}

// Rootfs writes the suite's image, a root filesystem directory: static
// busybox with its applets in /bin, the usual top directories, and the
// agent's mount point. It needs /bin/busybox (busybox-static) on the host.
func Rootfs(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "usr/bin", "etc", "tmp", "proc", "dev", "sys", "root", filepath.Dir(runtime.AgentPath)[1:]} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("busybox-static is needed for the test image: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "echo", "cat", "sleep", "ls", "dd", "hostname", "awk", "seq", "true", "false",
		"wc", "env", "pwd", "kill", "printf", "rm", "mkdir", "test", "uname", "nc", "grep"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A resolv.conf for a runtime to mount the sandbox's over.
	if err := os.WriteFile(filepath.Join(root, "etc/resolv.conf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, runtime.AgentPath), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// sandbox is one started instance and a ready client of its agent.
type sandbox struct {
	t    *testing.T
	b    Backend
	spec runtime.Spec
	inst runtime.Instance
	c    *agentclient.Client
}

// spec is a sandbox spec of b with a fresh id, edited by edit.
func (b Backend) spec(edit func(*runtime.Spec)) runtime.Spec {
	s := runtime.Spec{
		ID: uuid.NewString(), Image: b.Image, AgentPath: b.AgentPath,
		CPUs: 1, MemoryMB: b.MemoryMB, PidsLimit: 512, Hostname: "contract",
	}
	if edit != nil {
		edit(&s)
	}
	return s
}

// start starts a sandbox of spec on rt and waits for its agent. Its
// cleanup destroys it and checks that nothing of it is left.
func start(t *testing.T, b Backend, rt runtime.Runtime, spec runtime.Spec) *sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	t0 := time.Now()
	inst, err := rt.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
		defer cancel()
		if err := inst.Destroy(ctx); err != nil {
			t.Errorf("Destroy: %v", err)
		}
		if b.Gone != nil {
			b.Gone(t, spec.ID)
		}
	})
	c, err := agentclient.Dial(inst.Conn(), agentclient.Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("the agent did not answer: %v\nstderr: %s", err, inst.StderrTail())
	}
	t.Logf("sandbox %s: agent ready %v after Start", spec.ID, time.Since(t0).Round(time.Millisecond))
	return &sandbox{t: t, b: b, spec: spec, inst: inst, c: c}
}

// ctx is a context bounded by the backend's timeout.
func (s *sandbox) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.b.Timeout)
}

// run runs argv to completion through the agent, with PATH set, edited
// by edit; it fails t when the call itself fails.
func (s *sandbox) run(t *testing.T, argv []string, edit func(*agentv1.ExecRequest)) *agentv1.ExecResponse {
	t.Helper()
	resp, err := s.exec(argv, edit)
	if err != nil {
		t.Fatalf("exec %q: %v\nstderr: %s", argv, err, s.inst.StderrTail())
	}
	return resp
}

// exec is run that returns the call's error.
func (s *sandbox) exec(argv []string, edit func(*agentv1.ExecRequest)) (*agentv1.ExecResponse, error) {
	req := &agentv1.ExecRequest{Argv: argv, Env: []string{"PATH=" + runtime.DefaultPath}, TimeoutMs: s.b.Timeout.Milliseconds()}
	if edit != nil {
		edit(req)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.c.Exec(ctx, req)
}

// sh runs script with sh -c and returns its stdout, failing t unless it
// exits 0.
func (s *sandbox) sh(t *testing.T, script string) string {
	t.Helper()
	r := s.run(t, []string{"sh", "-c", script}, nil)
	if r.GetExitCode() != 0 || !r.GetExited() {
		t.Fatalf("sh -c %q: exit %d (exited %v), stdout %q, stderr %q", script, r.GetExitCode(), r.GetExited(), r.GetStdout(), r.GetStderr())
	}
	return string(r.GetStdout())
}

// background starts argv as a process that outlives its stream and
// returns its pid.
func (s *sandbox) background(t *testing.T, argv ...string) int32 {
	t.Helper()
	pid, err := s.spawn(argv...)
	if err != nil {
		t.Fatalf("starting %q: %v", argv, err)
	}
	return pid
}

// spawn is background that returns the error of a refused spawn.
func (s *sandbox) spawn(argv ...string) (int32, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	ev, err := s.c.Start(ctx, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: argv, Env: []string{"PATH=" + runtime.DefaultPath}}})
	if err != nil {
		return 0, err
	}
	defer ev.Close() // detach: the process runs on
	first, err := ev.Recv()
	if err != nil {
		return 0, err
	}
	if first.GetStarted() == nil {
		return 0, fmt.Errorf("the first event of %q is %v, not started", argv, first)
	}
	return ev.Pid(), nil
}

// alive reports whether process pid of the sandbox has not exited.
func (s *sandbox) alive(t *testing.T, pid int32) bool {
	t.Helper()
	r := s.run(t, []string{"kill", "-0", fmt.Sprint(pid)}, nil)
	return r.GetExitCode() == 0
}

// waitClosed fails t unless ch closes within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
	}
}

// seq is what seq n prints.
func seq(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// ended reports whether inst has ended.
func ended(inst runtime.Instance) bool {
	select {
	case <-inst.Done():
		return true
	default:
		return false
	}
}

// testRefusals: a Spec that needs an ability the runtime does not report
// is refused with S302 and leaves nothing behind.
func testRefusals(t *testing.T, b Backend, ab runtime.Abilities) {
	cases := []struct {
		name string
		has  bool
		edit func(*runtime.Spec)
	}{
		{"Mounts", ab.Mounts, func(s *runtime.Spec) {
			s.Mounts = []runtime.Mount{{Source: t.TempDir(), Destination: "/data"}}
		}},
		{"UpperLayer", ab.Layer, func(s *runtime.Spec) {
			s.UpperLayer = filepath.Join(t.TempDir(), "layer.tar")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.has {
				t.Logf("the runtime has this ability; its refusal does not apply")
				return
			}
			spec := b.spec(tc.edit)
			ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
			defer cancel()
			inst, err := b.Runtime.Start(ctx, spec)
			if err == nil {
				_ = inst.Destroy(ctx)
				t.Fatalf("Start with %s succeeded in a runtime that reports no such ability", tc.name)
			}
			if !errdefs.Is(err, errdefs.CodeUnsupported) {
				t.Errorf("Start with %s: %v (code %s); want %s", tc.name, err, errdefs.CodeOf(err), errdefs.CodeUnsupported)
			}
			if b.Gone != nil {
				b.Gone(t, spec.ID)
			}
		})
	}
}

// testSandbox runs one sandbox through the contract's calls, then stops it.
func testSandbox(t *testing.T, b Backend, ab runtime.Abilities) {
	s := start(t, b, b.Runtime, b.spec(func(sp *runtime.Spec) {
		if b.Limits.Disk {
			sp.WritableLayerMB = diskMB
		}
	}))
	if ended(s.inst) || s.inst.Exit().Ended() {
		t.Fatalf("a running sandbox has ended: %+v", s.inst.Exit())
	}
	t.Run("Abilities", func(t *testing.T) { testAbilities(t, b, ab, s) })
	t.Run("Exec", func(t *testing.T) { testExec(t, s) })
	t.Run("Processes", func(t *testing.T) { testProcesses(t, s) })
	t.Run("Files", func(t *testing.T) { testFiles(t, b, s) })
	if b.Isolated {
		t.Run("Isolation", func(t *testing.T) { testIsolation(t, b, s) })
	}
	if b.Limits.Disk {
		t.Run("DiskLimit", func(t *testing.T) { testDiskLimit(t, s) })
	}
	if ab.Stats {
		t.Run("Stats", func(t *testing.T) { testStats(t, b, s) })
	}
	if ab.Pause {
		t.Run("Pause", func(t *testing.T) { testPause(t, s) })
	}
	if ab.Resize {
		t.Run("Resize", func(t *testing.T) {
			if err := s.inst.(runtime.Resizer).Resize(1, b.MemoryMB); err != nil {
				t.Fatalf("Resize to the limits it has: %v", err)
			}
			if r := s.run(t, []string{"echo", "resized"}, nil); string(r.GetStdout()) != "resized\n" {
				t.Errorf("exec after Resize: %q", r.GetStdout())
			}
		})
	}
	t.Run("Destroy", func(t *testing.T) { testDestroy(t, b, s, ab) })
}

// testAbilities: what the runtime reports is what its instances are.
func testAbilities(t *testing.T, b Backend, ab runtime.Abilities, s *sandbox) {
	_, pause := s.inst.(runtime.Pauser)
	_, checkpoint := s.inst.(runtime.Checkpointer)
	_, restore := b.Runtime.(runtime.Restorer)
	_, resize := s.inst.(runtime.Resizer)
	_, stats := s.inst.(runtime.StatsReader)
	_, layer := s.inst.(runtime.LayerCapturer)
	for _, c := range []struct {
		name      string
		reported  bool
		implement bool
	}{
		{"pause (Pauser)", ab.Pause, pause},
		{"checkpoint (Checkpointer and Restorer)", ab.Checkpoint, checkpoint && restore},
		{"resize (Resizer)", ab.Resize, resize},
		{"stats (StatsReader)", ab.Stats, stats},
		{"layer (LayerCapturer)", ab.Layer, layer},
	} {
		if c.reported != c.implement {
			t.Errorf("ability %s: reported %v, but the instance implements it: %v", c.name, c.reported, c.implement)
		}
	}
	info := runtime.InfoOf(b.Runtime)
	if info.Name != b.Runtime.Name() || info.Abilities != ab.String() {
		t.Errorf("InfoOf = %+v; want name %s, abilities %s", info, b.Runtime.Name(), ab)
	}
}

// testExec: exit codes, stdin, stdout and stderr, workdir, env, timeout.
func testExec(t *testing.T, s *sandbox) {
	t.Run("ExitCodes", func(t *testing.T) {
		for _, c := range []struct {
			argv []string
			code int32
		}{
			{[]string{"true"}, 0},
			{[]string{"false"}, 1},
			{[]string{"sh", "-c", "exit 7"}, 7},
			{[]string{"sh", "-c", "kill -9 $$"}, 137},
			{[]string{"no-such-command-here"}, 127},
			{[]string{"/etc/passwd"}, 126},
		} {
			r := s.run(t, c.argv, nil)
			if r.GetExitCode() != c.code || r.GetTimedOut() || r.GetOomKilled() {
				t.Errorf("%q: exit %d (timed out %v, oom_killed %v), stderr %q; want exit %d", c.argv, r.GetExitCode(), r.GetTimedOut(), r.GetOomKilled(), r.GetStderr(), c.code)
			}
		}
	})
	t.Run("Output", func(t *testing.T) {
		r := s.run(t, []string{"sh", "-c", "echo out; echo err >&2; printf 'no newline'"}, nil)
		if string(r.GetStdout()) != "out\nno newline" || string(r.GetStderr()) != "err\n" || r.GetExitCode() != 0 {
			t.Errorf("stdout %q, stderr %q, exit %d", r.GetStdout(), r.GetStderr(), r.GetExitCode())
		}
		// More than a pipe's buffer on both streams at once.
		r = s.run(t, []string{"sh", "-c", "seq 20000 & seq 30000 >&2; wait"}, nil)
		if want := seq(20000); string(r.GetStdout()) != want {
			t.Errorf("seq 20000 on stdout: %d bytes, want %d", len(r.GetStdout()), len(want))
		}
		if want := seq(30000); string(r.GetStderr()) != want {
			t.Errorf("seq 30000 on stderr: %d bytes, want %d", len(r.GetStderr()), len(want))
		}
	})
	t.Run("Stdin", func(t *testing.T) {
		in := bytes.Repeat([]byte("stdin line\n"), 1000)
		r := s.run(t, []string{"cat"}, func(req *agentv1.ExecRequest) { req.Stdin = in })
		if !bytes.Equal(r.GetStdout(), in) {
			t.Errorf("cat of %d bytes of stdin gave %d bytes", len(in), len(r.GetStdout()))
		}
		// Without stdin, a reader sees EOF at once.
		if r := s.run(t, []string{"wc", "-c"}, nil); strings.TrimSpace(string(r.GetStdout())) != "0" {
			t.Errorf("wc -c of no stdin: %q", r.GetStdout())
		}
	})
	t.Run("Workdir", func(t *testing.T) {
		if r := s.run(t, []string{"pwd"}, nil); string(r.GetStdout()) != "/\n" {
			t.Errorf("pwd without a workdir: %q, want /", r.GetStdout())
		}
		r := s.run(t, []string{"pwd"}, func(req *agentv1.ExecRequest) { req.Workdir = s.b.Scratch })
		if strings.TrimSpace(string(r.GetStdout())) != s.b.Scratch {
			t.Errorf("pwd in %s: %q", s.b.Scratch, r.GetStdout())
		}
		missing := filepath.Join(s.b.Scratch, "no-such-directory")
		if r, err := s.exec([]string{"pwd"}, func(req *agentv1.ExecRequest) { req.Workdir = missing }); err == nil && r.GetExitCode() == 0 {
			t.Errorf("pwd in a missing directory succeeded: %q", r.GetStdout())
		}
	})
	t.Run("Env", func(t *testing.T) {
		env := []string{"PATH=" + runtime.DefaultPath, "A=1", "B=with space", "EMPTY="}
		r := s.run(t, []string{"env"}, func(req *agentv1.ExecRequest) { req.Env = env })
		got := strings.Split(strings.TrimSuffix(string(r.GetStdout()), "\n"), "\n")
		sort.Strings(got)
		want := slices.Sorted(slices.Values(env))
		if !slices.Equal(got, want) {
			t.Errorf("env = %q; want exactly %q", got, want)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		// The timeout kills the process group and keeps what was written.
		// (3 s: room for a loaded host to run the echo first.)
		r := s.run(t, []string{"sh", "-c", "echo partial; sleep 600"}, func(req *agentv1.ExecRequest) { req.TimeoutMs = 3000 })
		if !r.GetTimedOut() || r.GetExited() || string(r.GetStdout()) != "partial\n" {
			t.Errorf("echo partial; sleep 600 with a 3 s timeout: timed out %v, exited %v, exit %d, stdout %q", r.GetTimedOut(), r.GetExited(), r.GetExitCode(), r.GetStdout())
		}
	})
}

// testProcesses: a background process runs on after its stream, takes a
// signal and is waited for.
func testProcesses(t *testing.T, s *sandbox) {
	pid := s.background(t, "sleep", "600")
	if !s.alive(t, pid) {
		t.Fatalf("the background process %d is gone after its stream closed", pid)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.c.Signal(ctx, pid, syscall.SIGKILL); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	e, err := s.c.Wait(ctx, pid)
	if err != nil || e.GetExitCode() != 137 || e.GetOomKilled() {
		t.Errorf("Wait after SIGKILL: %v, %v; want exit 137, not oom_killed", e, err)
	}
}

// testFiles: the agent's Fs service and the processes see one filesystem.
func testFiles(t *testing.T, b Backend, s *sandbox) {
	ctx, cancel := s.ctx()
	defer cancel()
	dir := filepath.Join(b.Scratch, "contract-files-"+s.spec.ID[:8])
	if _, err := s.c.Mkdir(ctx, &agentv1.FsMkdirRequest{Path: dir, Mode: 0o755}); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	body := bytes.Repeat([]byte("file body\n"), 50_000) // several upload chunks
	p := filepath.Join(dir, "f.txt")
	if w, err := s.c.Upload(ctx, &agentv1.FsUploadHeader{Path: p}, bytes.NewReader(body), nil); err != nil || w.GetBytesWritten() != int64(len(body)) {
		t.Fatalf("Upload: %v, %v", w, err)
	}
	if out := s.sh(t, "wc -c < "+p); strings.TrimSpace(out) != fmt.Sprint(len(body)) {
		t.Errorf("wc -c of the uploaded file: %q, want %d", out, len(body))
	}
	s.sh(t, "echo written by a process > "+filepath.Join(dir, "g.txt"))
	rf, err := s.c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: filepath.Join(dir, "g.txt"), MaxBytes: 1 << 20})
	if err != nil || string(rf.GetContent()) != "written by a process\n" {
		t.Errorf("ReadFile of a process's file: %v, %v", rf, err)
	}
	ls, err := s.c.Ls(ctx, &agentv1.FsLsRequest{Path: dir})
	var names []string
	for _, e := range ls.GetEntries() {
		names = append(names, e.GetName())
	}
	if sort.Strings(names); err != nil || !slices.Equal(names, []string{"f.txt", "g.txt"}) {
		t.Errorf("Ls = %q, %v", names, err)
	}
	if _, err := s.c.Rm(ctx, &agentv1.FsRmRequest{Path: dir, Recursive: true}); err != nil {
		t.Fatalf("Rm: %v", err)
	}
	if r := s.run(t, []string{"test", "-e", dir}, nil); r.GetExitCode() == 0 {
		t.Errorf("%s still exists after Rm", dir)
	}
}

// testIsolation: the sandbox has its host name and a root filesystem of
// its own, writable, whose writes another sandbox of the image and the
// image itself never see.
func testIsolation(t *testing.T, b Backend, s *sandbox) {
	if out := s.sh(t, "hostname"); out != s.spec.Hostname+"\n" {
		t.Errorf("hostname = %q, want %s", out, s.spec.Hostname)
	}
	s.sh(t, "echo mine > /etc/contract-note && mkdir -p /usr/contract && echo x > /usr/contract/x")
	if b.Image.Kind == runtime.ArtifactDir {
		if _, err := os.Stat(filepath.Join(b.Image.Path, "etc/contract-note")); !os.IsNotExist(err) {
			t.Errorf("a write in the sandbox reached the image directory (stat: %v)", err)
		}
	}
	other := start(t, b, b.Runtime, b.spec(nil))
	if r := other.run(t, []string{"cat", "/etc/contract-note"}, nil); r.GetExitCode() == 0 {
		t.Errorf("another sandbox of the image sees the first one's write: %q", r.GetStdout())
	}
}

// testDiskLimit: the writable layer holds WritableLayerMB, then ENOSPC;
// the sandbox runs on.
func testDiskLimit(t *testing.T, s *sandbox) {
	r := s.run(t, []string{"dd", "if=/dev/zero", "of=/contract-big", "bs=1M", fmt.Sprintf("count=%d", 2*diskMB)}, nil)
	if r.GetExitCode() == 0 || !strings.Contains(string(r.GetStderr()), "No space left") {
		t.Errorf("writing %d MiB to a %d MiB writable layer: exit %d, stderr %q", 2*diskMB, diskMB, r.GetExitCode(), r.GetStderr())
	}
	s.sh(t, "rm -f /contract-big")
	if out := s.sh(t, "echo after > /etc/after && cat /etc/after"); out != "after\n" {
		t.Errorf("a write after the disk was freed: %q", out)
	}
}

// testStats: a running sandbox's use reads without error; with Measures
// it is real use.
func testStats(t *testing.T, b Backend, s *sandbox) {
	sr := s.inst.(runtime.StatsReader)
	if b.Limits.Disk {
		s.sh(t, "dd if=/dev/urandom of=/contract-stats bs=1M count=8 2>/dev/null && sync")
		defer s.sh(t, "rm -f /contract-stats")
	}
	st, err := sr.Stats()
	if err != nil {
		t.Fatalf("Stats of a running sandbox: %v", err)
	}
	t.Logf("stats: %+v", st)
	if b.Measures && (st.CPUSeconds <= 0 || st.MemoryBytes == 0) {
		t.Errorf("Stats = %+v; want CPU time and memory in use", st)
	}
	if b.Measures && b.Limits.Disk && st.DiskBytes < 4<<20 {
		t.Errorf("Stats.DiskBytes = %d after writing 8 MiB to the writable layer", st.DiskBytes)
	}
}

// testPause: a paused sandbox's agent does not answer, its session
// stays; resumed, its processes and files are as they were.
func testPause(t *testing.T, s *sandbox) {
	p := s.inst.(runtime.Pauser)
	pid := s.background(t, "sleep", "600")
	s.sh(t, "echo before > "+filepath.Join(s.b.Scratch, "contract-pause"))
	ctx, cancel := s.ctx()
	defer cancel()
	if err := p.Pause(ctx); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := s.c.Info(short)
	cancelShort()
	if err == nil {
		t.Error("the agent of a paused sandbox answered")
	}
	if ended(s.inst) {
		t.Fatalf("the sandbox ended while paused: %+v", s.inst.Exit())
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if out := s.sh(t, "cat "+filepath.Join(s.b.Scratch, "contract-pause")); out != "before\n" {
		t.Errorf("a file written before the pause: %q", out)
	}
	if !s.alive(t, pid) {
		t.Errorf("a process started before the pause is gone after the resume")
	}
	s.sh(t, fmt.Sprintf("kill -9 %d; rm -f %s", pid, filepath.Join(s.b.Scratch, "contract-pause")))
}

// testDestroy: Destroy ends the sandbox and its session, leaves Exit
// zero, is idempotent, and leaves nothing for Reconcile.
func testDestroy(t *testing.T, b Backend, s *sandbox, ab runtime.Abilities) {
	// A process running at the end goes with the sandbox.
	s.background(t, "sleep", "600")
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	waitClosed(t, s.inst.Done(), b.Timeout, "Done after Destroy")
	waitClosed(t, s.c.Done(), b.Timeout, "the agent session's end after Destroy")
	if e := s.inst.Exit(); e.Ended() {
		t.Errorf("Exit after an ordinary Destroy = %+v, want the zero End", e)
	}
	if err := s.inst.Destroy(ctx); err != nil {
		t.Errorf("a second Destroy: %v", err)
	}
	if _, err := s.c.Info(ctx); err == nil {
		t.Error("the agent answered after Destroy")
	}
	if ab.Stats {
		if st, err := s.inst.(runtime.StatsReader).Stats(); err == nil {
			t.Errorf("Stats of a destroyed sandbox = %+v, want an error", st)
		}
	}
	if b.Gone != nil {
		b.Gone(t, s.spec.ID)
	}
	ids, err := b.Runtime.Reconcile(ctx, func(id string) bool { return id != s.spec.ID })
	if err != nil || slices.Contains(ids, s.spec.ID) {
		t.Errorf("Reconcile after Destroy = %v, %v; want nothing of %s", ids, err, s.spec.ID)
	}
}

// testCrash: a sandbox killed from outside ends on its own with a typed
// End, its session ends, and Destroy still frees everything, keeping the
// End.
func testCrash(t *testing.T, b Backend) {
	s := start(t, b, b.Runtime, b.spec(nil))
	b.Crash(t, s.inst)
	waitClosed(t, s.inst.Done(), b.Timeout, "the crashed sandbox's end")
	waitClosed(t, s.c.Done(), b.Timeout, "the crashed sandbox's session's end")
	e := s.inst.Exit()
	if e.Cause != runtime.CauseExited || e.Detail == "" {
		t.Errorf("Exit after a crash = %+v; want cause %s with a detail", e, runtime.CauseExited)
	}
	if !errors.Is(s.c.Err(), agentclient.ErrClosed) {
		t.Errorf("the session's error = %v, want ErrClosed", s.c.Err())
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy of a crashed sandbox: %v", err)
	}
	if got := s.inst.Exit(); got != e {
		t.Errorf("Exit after Destroy of a crashed sandbox = %+v, want the crash's %+v", got, e)
	}
	if b.Gone != nil {
		b.Gone(t, s.spec.ID)
	}
}

// testReconcile: a restarted daemon's runtime destroys the sandboxes of
// the one before that keep rejects, and keeps the others.
func testReconcile(t *testing.T, b Backend) {
	left := start(t, b, b.Runtime, b.spec(nil))
	kept := start(t, b, b.Runtime, b.spec(nil))
	left.background(t, "sleep", "600")
	fresh := b.Restart(t)
	keep := func(id string) bool { return id == kept.spec.ID }
	ctx, cancel := left.ctx()
	defer cancel()
	ids, err := fresh.Reconcile(ctx, keep)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if !slices.Contains(ids, left.spec.ID) || slices.Contains(ids, kept.spec.ID) {
		t.Fatalf("Reconcile destroyed %v; want %s and not %s", ids, left.spec.ID, kept.spec.ID)
	}
	waitClosed(t, left.inst.Done(), b.Timeout, "the reconciled sandbox's end, seen by its first runtime")
	waitClosed(t, left.c.Done(), b.Timeout, "the reconciled sandbox's session's end")
	if b.Gone != nil {
		b.Gone(t, left.spec.ID)
	}
	if r := kept.run(t, []string{"echo", "kept"}, nil); string(r.GetStdout()) != "kept\n" {
		t.Errorf("the kept sandbox: %q", r.GetStdout())
	}
	if again, err := fresh.Reconcile(ctx, keep); err != nil || slices.Contains(again, left.spec.ID) {
		t.Errorf("a second Reconcile = %v, %v; want nothing of %s", again, err, left.spec.ID)
	}
	if err := left.inst.Destroy(ctx); err != nil {
		t.Errorf("Destroy through the first runtime after Reconcile: %v", err)
	}
}

// testMemoryLimit: a process that allocates past the memory limit does
// not get it: the process is killed (137, and oom_killed where the
// backend says so), or the whole sandbox ends with CauseOutOfMemory.
func testMemoryLimit(t *testing.T, b Backend) {
	s := start(t, b, b.Runtime, b.spec(nil))
	// awk doubles a string, keeping every copy, until it is killed.
	r, err := s.exec([]string{"awk", `BEGIN { s = sprintf("%65536s", ""); while (1) { s = s s; a[i++] = s } }`}, nil)
	if err == nil && !ended(s.inst) {
		t.Logf("awk past %d MiB: exit %d, oom_killed %v", b.MemoryMB, r.GetExitCode(), r.GetOomKilled())
		if r.GetExitCode() != 137 || r.GetTimedOut() || r.GetOomKilled() != b.Limits.OOMKilled {
			t.Errorf("awk past %d MiB: exit %d (oom_killed %v, timed out %v), stderr %q; want 137, oom_killed %v", b.MemoryMB, r.GetExitCode(), r.GetOomKilled(), r.GetTimedOut(), r.GetStderr(), b.Limits.OOMKilled)
		}
		if out := s.sh(t, "echo alive"); out != "alive\n" {
			t.Errorf("exec after the out-of-memory kill: %q", out)
		}
		return
	}
	waitClosed(t, s.inst.Done(), b.Timeout, "the sandbox's end (its exec failed: "+fmt.Sprint(err)+")")
	if e := s.inst.Exit(); e.Cause != runtime.CauseOutOfMemory {
		t.Errorf("Exit = %+v, want cause %s", e, runtime.CauseOutOfMemory)
	}
}

// testPidsLimit: past PidsLimit, spawns are refused and the sandbox runs
// on, or it ends with CausePidsLimit.
func testPidsLimit(t *testing.T, b Backend) {
	const limit = 64
	s := start(t, b, b.Runtime, b.spec(func(sp *runtime.Spec) { sp.PidsLimit = limit }))
	var pids []int32
	var refused error
	for range 2 * limit {
		pid, err := s.spawn("sleep", "600")
		if err != nil {
			refused = err
			break
		}
		pids = append(pids, pid)
	}
	t.Logf("%d background processes started under a limit of %d; then %v", len(pids), limit, refused)
	if ended(s.inst) {
		if e := s.inst.Exit(); e.Cause != runtime.CausePidsLimit {
			t.Errorf("the sandbox ended at its process limit with %+v, want cause %s", e, runtime.CausePidsLimit)
		}
		return
	}
	if refused == nil {
		t.Fatalf("%d processes started under a limit of %d", len(pids), limit)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	for _, pid := range pids {
		_ = s.c.Signal(ctx, pid, syscall.SIGKILL)
	}
	// The killed processes are reaped as they end; then spawns work again.
	testutil.Eventually(t, b.Timeout, func() bool {
		r, err := s.exec([]string{"echo", "again"}, nil)
		return err == nil && string(r.GetStdout()) == "again\n"
	}, "an exec after the processes were killed")
}
