package testutil

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDirectModulesAreNotIndirect: a module whose packages the repo
// imports (its tests included) or runs as a tool is required without
// `// indirect` in go.mod, as `go mod tidy` writes it. go list needs
// only the modules the build needs, so it runs offline once they are in
// the module cache.
func TestDirectModulesAreNotIndirect(t *testing.T) {
	gobin := RequiresBinary(t, "go")
	list := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(gobin, append([]string{"list", "-e"}, args...)...)
		cmd.Dir = RepoRoot()
		cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=readonly")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(cmd.Args[1:], " "), err)
		}
		return strings.Fields(string(out))
	}
	var imports []string
	for _, imp := range list("-f", "{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...") {
		// The standard library's paths have no dot in their first element.
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") && !strings.HasPrefix(imp, "github.com/hutch-dev/hutch/") {
			imports = append(imports, imp)
		}
	}
	if len(imports) == 0 {
		t.Fatal("go list listed no imports of other modules")
	}
	slices.Sort(imports)
	imports = slices.Compact(imports)
	// Each imported package or tool, as "module indirect".
	f := list(append([]string{"-f", "{{with .Module}}{{.Path}} {{.Indirect}}{{end}}", "tool"}, imports...)...)
	var marked []string
	for i := 0; i+1 < len(f); i += 2 {
		if f[i+1] == "true" {
			marked = append(marked, f[i])
		}
	}
	slices.Sort(marked)
	if marked = slices.Compact(marked); len(marked) > 0 {
		t.Errorf("go.mod marks modules the repo uses directly // indirect (run go mod tidy): %s", strings.Join(marked, ", "))
	}
}
