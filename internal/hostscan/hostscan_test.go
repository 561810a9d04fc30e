package hostscan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeftoversOfADataDir: the files a sandbox leaves in a data dir are
// found, by its directory and by its id, and nothing of another id.
func TestLeftoversOfADataDir(t *testing.T) {
	dir := t.TempDir()
	const id, other = "3f1c0c2e-0000-4000-8000-000000000001", "3f1c0c2e-0000-4000-8000-000000000002"
	for _, p := range []string{"gvisor/sandboxes/" + id, "gvisor/state/" + id, "snapshots/tmp-123"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	left := strings.Join(Leftovers(dir, []string{id, other}), "\n")
	for _, want := range []string{"sandbox directory: " + filepath.Join(dir, "gvisor/sandboxes", id), "directory: " + filepath.Join(dir, "gvisor/state", id), "checkpoint: " + filepath.Join(dir, "snapshots/tmp-123")} {
		if !strings.Contains(left, want) {
			t.Errorf("leftovers miss %q:\n%s", want, left)
		}
	}
	if strings.Contains(left, other) {
		t.Errorf("leftovers name %s, which left nothing:\n%s", other, left)
	}
	if got := Count(dir, []string{id}); got.Processes != 0 || got.Cgroups != 0 {
		t.Errorf("Count of a sandbox with only files: %+v", got)
	}
	if l := Leftovers(t.TempDir(), []string{other}); len(l) != 0 {
		t.Errorf("an empty data dir: %v", l)
	}
}
