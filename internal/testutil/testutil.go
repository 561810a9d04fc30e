// Package testutil holds helpers shared by hutch's tests: gating privileged
// tests, finding the repository's binaries and the shared image cache.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Required reports whether integration tests must run (HUTCH_REQUIRE_INTEGRATION=1):
// then a missing prerequisite fails the test instead of skipping it.
func Required() bool { return os.Getenv("HUTCH_REQUIRE_INTEGRATION") == "1" }

// skip skips t with reason, or fails it when integration is required.
func skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("integration prerequisite missing (HUTCH_REQUIRE_INTEGRATION=1): %s", reason)
	}
	t.Skip(reason)
}

// Skip skips t with reason, or fails it when integration is required: for
// a prerequisite of the host that only the test itself can check.
func Skip(t testing.TB, reason string) {
	t.Helper()
	skip(t, reason)
}

// RequiresRuntime skips t unless HUTCH_TEST_RUNTIMES (comma-separated;
// "gvisor" when unset) names the isolation runtime rt. Which runtimes a
// run tests is chosen, not found on the host, so an unchosen one skips
// even when integration is required; a chosen one needs root and a run
// without -short like any integration test.
func RequiresRuntime(t testing.TB, rt string) {
	t.Helper()
	if list := Runtimes(); !slices.Contains(list, rt) {
		t.Skipf("runtime %s not in HUTCH_TEST_RUNTIMES (%s)", rt, strings.Join(list, ","))
	}
	RequiresRoot(t)
	if testing.Short() {
		skip(t, "integration test skipped in -short mode")
	}
}

// Runtimes are the isolation runtimes a run tests, in the order
// HUTCH_TEST_RUNTIMES (comma-separated; "gvisor" when unset) names them.
func Runtimes() []string {
	list := os.Getenv("HUTCH_TEST_RUNTIMES")
	if list == "" {
		list = "gvisor"
	}
	return strings.Split(list, ",")
}

// RequiresRoot skips t unless it runs as root.
func RequiresRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skip(t, "needs root")
	}
}

// RequiresBinary skips t unless the program name (a name looked up on
// PATH, or a path) exists and is executable; it returns its path.
func RequiresBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		skip(t, fmt.Sprintf("needs %s: %v", name, err))
	}
	return p
}

// NodeModules makes sure dir (a folder of the repository with a
// package-lock.json) has its npm packages, installing them with `npm ci`
// when probe (a path under node_modules) is missing, as `make conformance`
// does; it returns dir's node_modules.
func NodeModules(t testing.TB, dir, probe string) string {
	t.Helper()
	modules := filepath.Join(RepoRoot(), dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, probe)); err == nil {
		return modules
	}
	npm := exec.Command(RequiresBinary(t, "npm"), "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	npm.Dir = filepath.Join(RepoRoot(), dir)
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return modules
}

// RequiresIntegration skips t unless the host can boot real sandboxes:
// root, a runsc binary (bin/runsc or $HUTCH_RUNSC) and mmdebstrap for presets.
func RequiresIntegration(t testing.TB) {
	t.Helper()
	RequiresRoot(t)
	if testing.Short() {
		skip(t, "integration test skipped in -short mode")
	}
	if _, err := os.Stat(RunscPath()); err != nil {
		skip(t, "runsc not built (run `make build`): "+err.Error())
	}
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RunscPath is the runsc binary tests use: $HUTCH_RUNSC, else bin/runsc.
func RunscPath() string {
	if p := os.Getenv("HUTCH_RUNSC"); p != "" {
		return p
	}
	return filepath.Join(RepoRoot(), "bin", "runsc")
}

// ImageCacheDir is the image cache shared by every test run on this machine,
// so each preset is built once per machine: $HUTCH_TEST_IMAGE_CACHE, else
// /var/tmp/hutch-image-cache.
func ImageCacheDir() string {
	if p := os.Getenv("HUTCH_TEST_IMAGE_CACHE"); p != "" {
		return p
	}
	return "/var/tmp/hutch-image-cache"
}

var (
	buildMu sync.Mutex
	// built is guarded by buildMu: package path → binary path.
	built = map[string]string{}
)

// BuildBinary builds a main package of this module (e.g. "./cmd/hutch-agent")
// statically, once per test process, and returns the binary's path. The
// binaries are removed by Main when the package's tests end.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	return BuildBinaryTags(t, pkg, "")
}

// BuildBinaryTags is BuildBinary with build tags (comma-separated, "" for
// none), built once per package and tags.
func BuildBinaryTags(t testing.TB, pkg, tags string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[pkg+" "+tags]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "hutch-test-bin-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-tags", tags, "-o", out, pkg)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	built[pkg+" "+tags] = out
	return out
}

// Main runs a package's tests (TestMain's m) and then removes the
// binaries BuildBinary built for them; its result is the exit code.
func Main(m *testing.M) int {
	code := m.Run()
	buildMu.Lock()
	defer buildMu.Unlock()
	for pkg, p := range built {
		_ = os.RemoveAll(filepath.Dir(p))
		delete(built, pkg)
	}
	return code
}
