package snapsvc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrefetch: a checkpoint directory's regular files are asked for, not
// its directories; a directory that is gone asks for nothing.
func TestPrefetch(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"checkpoint.img", "pages.img"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if n := prefetch(dir); n != 2 {
		t.Errorf("prefetch asked for %d files, want 2", n)
	}
	if n := prefetch(filepath.Join(dir, "gone")); n != 0 {
		t.Errorf("prefetch of a missing directory asked for %d files", n)
	}
}
