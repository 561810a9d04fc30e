package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestOpsDoctor: on a host that runs the integration tests, `hutch doctor`
// passes (exit 0) and reports each check.
func TestOpsDoctor(t *testing.T) {
	testutil.RequiresIntegration(t)
	hutch, agent := binaries(t)
	out, err := exec.Command(hutch, "doctor", "--listen", "127.0.0.1:0", "--engine-listen", "", "--data-dir", t.TempDir(),
		"--runsc-path", testutil.RunscPath(), "--agent-path", agent).CombinedOutput()
	if err != nil {
		t.Fatalf("hutch doctor: %v\n%s", err, out)
	}
	for _, want := range []string{"ok    root", "ok    runsc", "runsc version ", "ok    hutch-agent", "hutch can run here"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
