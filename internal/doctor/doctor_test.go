package doctor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fakeProc writes a procfs of files under a temp dir.
func fakeProc(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKernel(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    Verdict
	}{
		{"6.1.0-13-amd64", OK},
		{"4.14.0", OK},
		{"4.9.337", Fail},
		{"3.10.0-1160.el7", Fail},
		{"weird", Warn},
	} {
		proc := fakeProc(t, map[string]string{"sys/kernel/osrelease": tc.release + "\n"})
		if got := kernel(proc); got.Verdict != tc.want || (got.Verdict == Fail) != (got.Fix != "") {
			t.Errorf("kernel %s: %+v, want %v with a fix when failing", tc.release, got, tc.want)
		}
	}
}

func TestMemory(t *testing.T) {
	cfg := config.Default() // 512 MiB a sandbox, 256 MiB the warm pool
	for _, tc := range []struct {
		availKB int
		want    Verdict
	}{
		{8 << 20, OK},
		{600 << 10, Warn},
		{100 << 10, Fail},
	} {
		proc := fakeProc(t, map[string]string{"meminfo": fmt.Sprintf("MemTotal: 9999999 kB\nMemAvailable: %d kB\n", tc.availKB)})
		if got := memory(proc, cfg); got.Verdict != tc.want {
			t.Errorf("%d kB available: %+v, want %v", tc.availKB, got, tc.want)
		}
	}
}

func TestCgroups(t *testing.T) {
	v2 := fakeProc(t, map[string]string{"fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n"})
	if c := cgroupCheck(v2); c.Verdict != OK {
		t.Errorf("v2 with every controller: %+v", c)
	}
	noPids := fakeProc(t, map[string]string{"fs/cgroup/cgroup.controllers": "cpu memory\n"})
	if c := cgroupCheck(noPids); c.Verdict != Fail || !strings.Contains(c.Fix, "pids") {
		t.Errorf("v2 without pids: %+v, want a failure naming pids", c)
	}
	v1 := fakeProc(t, map[string]string{"fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"})
	if c := cgroupCheck(v1); c.Verdict != Warn {
		t.Errorf("v1: %+v, want a warning", c)
	}
	if c := cgroupCheck(t.TempDir()); c.Verdict != Fail {
		t.Errorf("no cgroups: %+v, want a failure", c)
	}
}

// TestPort: a free port is ok, one a hutch daemon holds is ok, one
// another program holds fails.
func TestPort(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	ln.Close()
	if c := port(ctx, free); c.Verdict != OK {
		t.Errorf("free port: %+v", c)
	}
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if c := port(ctx, strings.TrimPrefix(other.URL, "http://")); c.Verdict != Fail || c.Fix == "" {
		t.Errorf("port of another program: %+v, want a failure with a fix", c)
	}
	hutch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status":"ok","runtimes":[]}`)
	}))
	defer hutch.Close()
	if c := port(ctx, strings.TrimPrefix(hutch.URL, "http://")); c.Verdict != OK || !strings.Contains(c.Detail, "hutch") {
		t.Errorf("port of a hutch daemon: %+v", c)
	}
}

func TestBinaries(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	if c := runsc(context.Background(), missing, config.Default()); c.Verdict != Fail {
		t.Errorf("missing runsc: %+v", c)
	}
	if c := agent(missing); c.Verdict != Fail {
		t.Errorf("missing agent: %+v", c)
	}
	built := testutil.BuildBinary(t, "./cmd/hutch-agent")
	if c := agent(built); c.Verdict != OK || !strings.Contains(c.Detail, "hutch-agent ") || !strings.Contains(c.Detail, "go1.") {
		t.Errorf("agent: %+v, want its version and Go build", c)
	}
	// A Go binary that is not the agent says no version.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if c := agent(self); c.Verdict != Fail {
		t.Errorf("a binary that is not the agent: %+v", c)
	}
}

func TestFailed(t *testing.T) {
	if Failed([]Check{{Verdict: OK}, {Verdict: Warn}}) {
		t.Error("warnings count as a failure")
	}
	if !Failed([]Check{{Verdict: OK}, {Verdict: Fail}}) {
		t.Error("a failure does not count")
	}
}
