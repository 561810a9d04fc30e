package cli

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteLocalCutOff checks that a download cut off midway leaves
// neither LOCAL nor a temporary file behind, and keeps an existing LOCAL.
func TestWriteLocalCutOff(t *testing.T) {
	cut := errors.New("unexpected EOF")
	for _, existing := range []bool{false, true} {
		dir := t.TempDir()
		dst := filepath.Join(dir, "file")
		if existing {
			if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src := io.MultiReader(strings.NewReader("partial"), readerFunc(func([]byte) (int, error) { return 0, cut }))
		if err := writeLocal(dst, src, 0o644); !errors.Is(err, cut) {
			t.Fatalf("writeLocal of a cut-off stream: %v, want %v", err, cut)
		}
		entries, _ := os.ReadDir(dir)
		b, err := os.ReadFile(dst)
		switch {
		case existing && (len(entries) != 1 || string(b) != "old"):
			t.Errorf("existing file after a cut-off download: %q (%v), dir %v", b, err, entries)
		case !existing && len(entries) != 0:
			t.Errorf("files after a cut-off download: %v", entries)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
