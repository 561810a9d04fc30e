package integration

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// requiresRuntimeHost skips t unless HUTCH_TEST_RUNTIMES names rt and the
// host can run it: runsc for gvisor; QEMU and a guest kernel for microvm.
func requiresRuntimeHost(t *testing.T, rt string) {
	t.Helper()
	testutil.RequiresRuntime(t, rt)
	switch rt {
	case "gvisor":
		testutil.RequiresIntegration(t)
	case "microvm":
		testutil.RequiresBinary(t, "qemu-system-x86_64")
		if k, _ := filepath.Glob("/boot/vmlinuz-*-cloud-amd64"); len(k) == 0 {
			testutil.Skip(t, "no Debian cloud kernel (make deps)")
		}
	}
}

// bbEnv is the environment of the busybox image bb: the bottom layer of
// a sandbox's env.
var bbEnv = []string{"PATH=/bin", "LAYER=image", "IMAGE_ONLY=0"}

// startRuntimesDaemon starts a daemon that offers runtimes (the first is
// its default) with a private image cache, a busybox image named bb, and
// extra config keys. It skips t unless the host can run every one of
// them.
func startRuntimesDaemon(t *testing.T, runtimes []string, extra string) *daemon {
	t.Helper()
	return startRuntimesDaemonWith(t, runtimes, extra, nil)
}

// startRuntimesDaemonWith is startRuntimesDaemon with more images: each
// name is bb with more files.
func startRuntimesDaemonWith(t *testing.T, runtimes []string, extra string, more map[string][]ocitest.File) *daemon {
	t.Helper()
	for _, rt := range runtimes {
		requiresRuntimeHost(t, rt)
	}
	images := map[string][]ocitest.File{"bb": nil}
	maps.Copy(images, more)
	var names, entries []string
	for _, name := range slices.Sorted(maps.Keys(images)) {
		dir := filepath.Join(t.TempDir(), "layout")
		// A resolv.conf for gVisor to mount the sandbox's over (network.go).
		files := append(ocitest.BusyboxFiles(t), ocitest.Reg("etc/resolv.conf", "", 0o644))
		files = append(files, images[name]...)
		writeLayout(t, dir, ocitest.Image(t, ocitest.Config{Env: bbEnv}, ocitest.Layer(t, files...)))
		names, entries = append(names, name), append(entries, fmt.Sprintf("%s: %q", name, "oci-layout:"+dir))
	}
	cfg := fmt.Sprintf("default_runtime: %s\noffered_runtimes: [%s]\ncustom_images: {%s}\nimage_allowlist: [%s]\n%s",
		runtimes[0], strings.Join(runtimes, ", "), strings.Join(entries, ", "), strings.Join(names, ", "), extra)
	return launchDaemon(t, customConfig(t, "", cfg), "")
}

// startTestedRuntimesDaemon is startRuntimesDaemon for every runtime
// HUTCH_TEST_RUNTIMES names: the daemon of eachRuntime.
func startTestedRuntimesDaemon(t *testing.T, extra string) *daemon {
	t.Helper()
	return startRuntimesDaemon(t, testutil.Runtimes(), extra)
}

// eachRuntime runs f as a subtest per runtime HUTCH_TEST_RUNTIMES names,
// in turn, with d (a startTestedRuntimesDaemon) failing that subtest; f
// creates its sandboxes there with that Runtime. What a runtime itself
// must do (lifecycle, exec semantics, files, limits, pause, stats, crash,
// reconcile) is the runtime contract suite's (internal/runtime/runtimesuite),
// which every backend's own test runs; a per-runtime test here checks
// the daemon's side of what differs per runtime (terminals, networks,
// filesystem error codes, a stop's leftovers), not the suite's checks
// again.
func eachRuntime(t *testing.T, d *daemon, f func(t *testing.T, rt string)) {
	for _, rt := range testutil.Runtimes() {
		t.Run(rt, func(st *testing.T) {
			d.t = st
			defer func() { d.t = t }()
			f(st, rt)
		})
	}
}

// TestProcessesAndTerminals: in each runtime, a background process takes
// stdin and is waited for, and a shell on a terminal runs what is typed
// into it: the agent's process and PTY services are the same program in
// both.
func TestProcessesAndTerminals(t *testing.T) {
	d := startTestedRuntimesDaemon(t, "")
	ctx := context.Background()
	eachRuntime(t, d, func(t *testing.T, rt string) {
		id := d.create(api.CreateRequest{Image: "bb", Runtime: rt})
		bg, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"cat"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: bg.Pid, Data: "hello\n", Close: true}); err != nil {
			t.Fatal(err)
		}
		info, err := d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: bg.Pid, TimeoutMs: 60_000})
		if err != nil || info.ExitCode == nil || *info.ExitCode != 0 {
			t.Fatalf("cat: %+v, %v", info, err)
		}
		out, err := d.c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: bg.Pid})
		if err != nil || chunkText(t, out.Stdout) != "hello\n" {
			t.Fatalf("cat's output: %+v, %v", out.Stdout, err)
		}

		term, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sh"}, Pty: &api.PtySize{Cols: 80, Rows: 24}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: term.Pid, Data: "stty size; echo $((6*7)); exit 3\n"}); err != nil {
			t.Fatal(err)
		}
		info, err = d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: term.Pid, TimeoutMs: 60_000})
		if err != nil || info.ExitCode == nil || *info.ExitCode != 3 {
			t.Fatalf("sh on a terminal: %+v, %v", info, err)
		}
		out, err = d.c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: term.Pid})
		if text := chunkText(t, out.Stdout); err != nil || !strings.Contains(text, "24 80") || !strings.Contains(text, "\n42") {
			t.Fatalf("the terminal showed %q (%v); want its size and 42", text, err)
		}
	})
}
