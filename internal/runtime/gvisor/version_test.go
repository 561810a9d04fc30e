package gvisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestRunscVersion checks that the runsc the Makefile builds names the
// gVisor version go.mod pins (the build stamps it), not VERSION_MISSING.
func TestRunscVersion(t *testing.T) {
	runsc := testutil.RunscPath()
	if _, err := os.Stat(runsc); err != nil {
		testutil.Skip(t, "runsc not built (run `make build`): "+err.Error())
	}
	mod, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := ""
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "gvisor.dev/gvisor" {
			pinned = f[1]
		}
	}
	if pinned == "" {
		t.Fatal("go.mod requires no gvisor.dev/gvisor")
	}
	out, err := exec.Command(runsc, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", runsc, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if first != "runsc version "+pinned {
		t.Errorf("%s --version says %q, want %q", runsc, first, "runsc version "+pinned)
	}
}
