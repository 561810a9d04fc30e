package kubetest

// issue 36: 2 — agent-sandbox's controller and CRDs on a test's control
// plane.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/kubecp"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// AgentSandboxVersion is the version of sigs.k8s.io/agent-sandbox pinned
// in deps/agentsandbox/go.mod, read as the Makefile reads it.
func AgentSandboxVersion() (string, error) {
	file := filepath.Join(testutil.RepoRoot(), "deps", "agentsandbox", "go.mod")
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	// `require M V` on one line, or M V in a require block.
	text := strings.ReplaceAll(string(b), "require sigs.k8s.io/agent-sandbox ", "sigs.k8s.io/agent-sandbox ")
	return pinnedIn(text, file, "sigs.k8s.io/agent-sandbox")
}

// RequiresAgentSandbox skips t (or fails it when integration is
// required) unless agent-sandbox is built (`make kube-deps`); it returns
// its directory.
func RequiresAgentSandbox(t testing.TB) string {
	t.Helper()
	return requireBuilt(t, "agent-sandbox's build", kubecp.AgentSandboxDir, kubecp.AgentSandboxBuilt)
}

// StartAgentSandbox applies agent-sandbox's CRDs and starts its
// controller (kubecp.StartAgentSandbox); it stops with the control plane.
func (cp *ControlPlane) StartAgentSandbox() {
	cp.t.Helper()
	dir := RequiresAgentSandbox(cp.t)
	if err := cp.ControlPlane.StartAgentSandbox(dir); err != nil {
		cp.t.Fatalf("starting agent-sandbox: %v\n%s", err, cp.LogTails(20))
	}
}
