package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCacheBytes(t *testing.T) {
	s := newTestStore(t, t.TempDir(), fakeRootfs)
	if n := s.CacheBytes(); n != 0 {
		t.Fatalf("empty cache: CacheBytes = %d", n)
	}
	var want int64
	for _, name := range []string{"python", "node"} {
		img, err := s.Ensure(context.Background(), name, true)
		if err != nil {
			t.Fatal(err)
		}
		if img.SizeBytes <= 0 {
			t.Fatalf("%s: SizeBytes = %d", name, img.SizeBytes)
		}
		want += img.SizeBytes
	}
	// A half-written entry (no image.json) does not count.
	if err := os.MkdirAll(filepath.Join(s.cache.imagesDir(), "junk", "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := s.CacheBytes(); got != want {
		t.Fatalf("CacheBytes = %d, want %d", got, want)
	}
}
