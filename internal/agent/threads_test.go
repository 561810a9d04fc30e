package agent

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// threads is this process's thread count, from /proc/self/status.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

func TestReserveThreadsLeavesThemRunning(t *testing.T) {
	ReserveThreads(ReservedThreads)
	if n := threads(t); n < ReservedThreads {
		t.Fatalf("%d threads after reserving %d", n, ReservedThreads)
	}
}

func TestThreadReserveIsAQuarterOfNproc(t *testing.T) {
	for _, tt := range []struct {
		nproc uint64
		want  int
	}{{24, 6}, {248, 32}, {unix.RLIM_INFINITY, ReservedThreads}} {
		if got := reserveUnder(tt.nproc); got != tt.want {
			t.Errorf("RLIMIT_NPROC %d: reserve %d, want %d", tt.nproc, got, tt.want)
		}
	}
}
