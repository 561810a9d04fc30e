package runtime_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestRuntimesDoNotImportConfig: the runtime contract and its backends
// (internal/runtime/..., their tests included) never depend on
// internal/config; a backend owns its block of the config
// (runtime.Registration.Settings), and internal/config asks the registry
// to decode it, not the other way round. Nor do they import
// internal/netplumb: the daemon's network service (internal/netsvc) makes
// a sandbox's network and hands the runtime plain values
// (runtime.NetworkAttachment). A backend's tests may build that service,
// as the daemon does, so only a direct import counts there.
func TestRuntimesDoNotImportConfig(t *testing.T) {
	const module = "github.com/hutch-dev/hutch/"
	forbidden := []string{module + "internal/config"}
	// forbiddenDirect may not be imported by a package of the contract.
	forbiddenDirect := []string{module + "internal/netplumb"}
	gobin := testutil.RequiresBinary(t, "go")
	cmd := exec.Command(gobin, "list", "-deps", "-test", "-f",
		`{{.ImportPath}}{{range .Imports}}{{"\t"}}{{.}}{{end}}`, "./...")
	cmd.Dir = testutil.RepoRoot() + "/internal/runtime"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// importers maps each package to those of its list that import it.
	importers := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A test's variant of a package is "path [pkg.test]".
		f := strings.Split(line, "\t")
		for i := range f {
			f[i], _, _ = strings.Cut(f[i], " ")
		}
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	if len(importers) == 0 {
		t.Fatal("go list listed no imports")
	}
	for _, pkg := range forbidden {
		if by := importers[pkg]; len(by) > 0 {
			slices.Sort(by)
			t.Errorf("internal/runtime/... depends on %s (imported by %s)", pkg, strings.Join(slices.Compact(by), ", "))
		}
	}
	for _, pkg := range forbiddenDirect {
		var by []string
		for _, imp := range importers[pkg] {
			if imp == module+"internal/runtime" || strings.HasPrefix(imp, module+"internal/runtime/") {
				by = append(by, imp)
			}
		}
		if len(by) > 0 {
			slices.Sort(by)
			t.Errorf("internal/runtime/... imports %s (in %s)", pkg, strings.Join(slices.Compact(by), ", "))
		}
	}
}
