package cli

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestMCPToolsFlag: an unknown tool set is a usage error, before the
// daemon is asked anything.
func TestMCPToolsFlag(t *testing.T) {
	fake := &functionstest.Fake{}
	out, errOut, code := newHarness(t, fake).run("", "mcp", "--tools", "default,everything")
	if code != 2 || !strings.Contains(errOut, `--tools: unknown tool set "everything": give all, default or areas (sandboxes, exec,`) || !strings.Contains(errOut, "--help' for usage") || out != "" {
		t.Errorf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if m := fake.Methods(); len(m) != 0 {
		t.Errorf("the daemon was called: %v", m)
	}
}
