package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
	for _, rt := range runtimes {
		requiresRuntimeHost(t, rt)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	// A resolv.conf for gVisor to mount the sandbox's over (network.go).
	files := append(ocitest.BusyboxFiles(t), ocitest.Reg("etc/resolv.conf", "", 0o644))
	writeLayout(t, dir, ocitest.Image(t, ocitest.Config{Env: bbEnv}, ocitest.Layer(t, files...)))
	cfg := fmt.Sprintf("default_runtime: %s\noffered_runtimes: [%s]\ncustom_images: {bb: %q}\nimage_allowlist: [bb]\n%s",
		runtimes[0], strings.Join(runtimes, ", "), "oci-layout:"+dir, extra)
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
// creates its sandboxes there with that Runtime.
func eachRuntime(t *testing.T, d *daemon, f func(t *testing.T, rt string)) {
	for _, rt := range testutil.Runtimes() {
		t.Run(rt, func(st *testing.T) {
			d.t = st
			defer func() { d.t = t }()
			f(st, rt)
		})
	}
}
