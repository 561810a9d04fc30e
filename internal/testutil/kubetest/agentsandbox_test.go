package kubetest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/kubecp"
)

// TestAgentSandboxVersion: the version deps/agentsandbox pins is what
// kubecp names and what the built controller says it is.
func TestAgentSandboxVersion(t *testing.T) {
	v, err := AgentSandboxVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v != kubecp.AgentSandboxVersion {
		t.Fatalf("deps/agentsandbox pins %s; kubecp names %s", v, kubecp.AgentSandboxVersion)
	}
	dir := RequiresAgentSandbox(t)
	if !strings.HasSuffix(dir, "agent-sandbox-"+v) {
		t.Errorf("AgentSandboxDir %s does not name agent-sandbox-%s", dir, v)
	}
	out, err := exec.Command(filepath.Join(dir, "bin", kubecp.AgentSandboxController), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "version "+v) {
		t.Errorf("%s --version: %v\n%s", kubecp.AgentSandboxController, err, out)
	}
}
