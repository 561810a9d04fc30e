package gvisor

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStdioPipesHoldAChunk checks that the agent stream's pipes hold a
// whole 1 MiB file chunk, where the host allows pipes that large.
func TestStdioPipesHoldAChunk(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		if max, _ := strconv.Atoi(strings.TrimSpace(string(b))); max < streamPipeBytes && os.Geteuid() != 0 {
			t.Skipf("this host caps pipes at %d bytes", max)
		}
	}
	p, err := newStdio()
	if err != nil {
		t.Fatal(err)
	}
	defer p.closeOurs()
	defer p.closeChilds()
	for name, f := range map[string]*os.File{"stdin": p.stdin, "stdout": p.stdout} {
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var size int
		var serr error
		_ = rc.Control(func(fd uintptr) { size, serr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
		if serr != nil || size < streamPipeBytes {
			t.Errorf("%s pipe holds %d bytes (%v), want %d", name, size, serr, streamPipeBytes)
		}
	}
}
