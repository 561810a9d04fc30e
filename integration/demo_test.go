package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestDemoNamesItsDaemon runs `make demo` (its deps and build taken as
// done, with the test's hutch) against a daemon at a HUTCH_URL written
// without a scheme and with a trailing slash, as the CLI takes it: the
// console URL it prints is that daemon's.
func TestDemoNamesItsDaemon(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	testutil.RequiresBinary(t, "make")
	hutch, agent := binaries(t)
	hostPort := strings.TrimPrefix(d.url, "http://")
	cmd := exec.Command("make", "-s", "-C", testutil.RepoRoot(), "-o", "deps", "-o", "build", "demo", "BIN="+filepath.Dir(hutch))
	// The test's binaries are built apart: hutch doctor, which make demo
	// runs first, finds the agent and runsc on PATH as it would next to
	// hutch after make build.
	path := filepath.Dir(agent) + string(os.PathListSeparator) + filepath.Dir(testutil.RunscPath()) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = append(cmd.Environ(), "HUTCH_URL="+hostPort+"/", "PATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "hello from a gVisor sandbox: 4") {
		t.Errorf("make demo ran no sandbox:\n%s", out)
	}
	if want := "console: open " + d.url + "/ui/ in a browser\n"; !strings.Contains(string(out), want) {
		t.Errorf("make demo does not say %q:\n%s", want, out)
	}
}
