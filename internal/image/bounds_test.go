package image

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

func TestPullBoundsUnpackedSize(t *testing.T) {
	noDockerConfig(t)
	reg := ocitest.NewRegistry(t, "", "")
	var many []ocitest.File
	for i := range 3000 {
		many = append(many, ocitest.Reg(fmt.Sprintf("f/%d", i), "", 0o644))
	}
	refs := map[string]string{
		// 4 MiB of zeros compress to a few KiB.
		"bomb": reg.Push(t, "bomb:1", ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("zeros", strings.Repeat("\x00", 4<<20), 0o644)))),
		// 3000 empty files: no content, but entries.
		"entries": reg.Push(t, "entries:1", ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, many...))),
		"small":   reg.Push(t, "small:1", ocitest.Image(t, ocitest.Config{}, ocitest.Layer(t, ocitest.Reg("hello", "world", 0o644)))),
	}
	dir := t.TempDir()
	s, err := NewStore(Options{
		CacheDir:         dir,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Suite:            "bookworm",
		Mirror:           "http://mirror.invalid/debian",
		CustomImages:     refs,
		MaxUnpackedBytes: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	for _, name := range []string{"bomb", "entries"} {
		_, err := s.Ensure(t.Context(), name, true)
		if err == nil {
			t.Fatalf("Ensure(%s) unpacked it; want S102 naming max_image_unpacked_mb", name)
		}
		if e := errdefs.As(err); e.Code != errdefs.CodeImagePull || !strings.Contains(e.Message, "more than 1 MiB (max_image_unpacked_mb)") || !strings.Contains(e.FixNote, "max_image_unpacked_mb") {
			t.Fatalf("Ensure(%s) = %v (fix %q); want S102 naming max_image_unpacked_mb", name, err, e.FixNote)
		}
		if images, tmp, _ := cacheEntries(t, dir); len(images) != 0 || len(tmp) != 0 {
			t.Fatalf("after the refused %s: images/ %v, tmp/ %v; want both empty", name, images, tmp)
		}
	}
	if _, err := s.Ensure(t.Context(), "small", true); err != nil {
		t.Fatalf("an image within the bound: %v", err)
	}
}

func TestCacheIsNotOpenToOtherUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	// An existing cache made with looser modes is tightened too.
	for _, sub := range []string{"", "images", "refs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	newCustomStore(t, dir, nil)
	for sub, want := range map[string]os.FileMode{"": 0o711, "images": 0o700, "refs": 0o700, "locks": 0o700, "tmp": 0o711} {
		st, err := os.Stat(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s/ mode %o, want %o", sub, got, want)
		}
	}
}
