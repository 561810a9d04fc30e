package image

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWith checks which images have a command: by recipe before a preset
// is built, by its root filesystem after, where a symlink resolves inside
// the image and never on the host.
func TestWith(t *testing.T) {
	s := newTestStore(t, t.TempDir(), func(_ context.Context, r recipe, dst string, _ func(string)) error {
		bin := filepath.Join(dst, "usr/bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return err
		}
		if slices.Contains(r.Packages, "nodejs") {
			// A link to a host path that exists there but not in the image.
			return os.Symlink("/bin/sh", filepath.Join(bin, "node"))
		}
		if err := os.WriteFile(filepath.Join(bin, "python3.11"), []byte("#!fake\n"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bin, "pip"), []byte("not executable\n"), 0o644); err != nil {
			return err
		}
		return os.Symlink("python3.11", filepath.Join(bin, "python3"))
	})
	want := map[string][]string{
		"python3": {"python", "python-data", "e2b-base"},
		"node":    {"node"},
		"bash":    {"python", "node", "python-data", "e2b-base"},
		"pip":     {"python-data", "e2b-base"},
		"npm":     {"node"},
		"ruby":    nil,
		"../sh":   nil,
	}
	for cmd, names := range want {
		if got := s.With(cmd); !slices.Equal(got, names) {
			t.Errorf("before any build, With(%q) = %v, want %v", cmd, got, names)
		}
	}
	for _, name := range []string{"node", "python-data", "e2b-base"} {
		if _, err := s.Ensure(context.Background(), name, true); err != nil {
			t.Fatal(err)
		}
	}
	// Built: node's link leads nowhere in the image; python-data's and
	// e2b-base's pip is not executable; the python preset is still judged
	// by its recipe.
	want = map[string][]string{
		"python3": {"python", "python-data", "e2b-base"},
		"node":    nil,
		"pip":     nil,
		"bash":    {"python"},
	}
	for cmd, names := range want {
		if got := s.With(cmd); !slices.Equal(got, names) {
			t.Errorf("after the builds, With(%q) = %v, want %v", cmd, got, names)
		}
	}
}
