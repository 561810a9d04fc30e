package tarfs_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
)

// fuzzMaxEntry is the largest entry content the fuzz targets accept (the
// callers charge sizes the same way, e.g. the image unpacker's budget).
const fuzzMaxEntry = 1 << 20

// FuzzExtract applies hostile tar streams to a root and checks that
// nothing outside it changed, that no more was written than the accepted
// headers declared, and that what was extracted packs and extracts again
// to the same tree (a round trip).
func FuzzExtract(f *testing.F) {
	for _, files := range [][]ocitest.File{
		{dir("d", 0o755), reg("d/f", "hello", 0o644), sym("d/l", "../../outside/secret"), hard("d/h", "d/f")},
		{sym("esc", "../../../outside"), reg("esc/victim", "pwned", 0o644)},
		{reg("../../../outside/victim", "pwned", 0o644)},
		{sym("a", "/"), dir("a/etc", 0o755), reg("a/etc/passwd", "x", 0o600)},
		{hard("h", "../../../outside/secret")},
		{dir("ro", 0o500), reg("ro/f", "in a read-only dir", 0o400)},
		{{Name: "fifo", Type: tar.TypeFifo, Mode: 0o600}, {Name: "dev", Type: tar.TypeChar, Mode: 0o600}},
	} {
		f.Add(ocitest.Tar(f, files...))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		root, outside := tarfstest.Fixture(t)
		var declared int64
		limit := func(hdr *tar.Header) error {
			if hdr.Size > fuzzMaxEntry {
				return errors.New("entry too large for the fuzz target")
			}
			declared += max(hdr.Size, 0)
			return nil
		}
		st, err := extractWith(t, root, tarfs.Options{ReplaceDirs: true}, stream, limit)
		tarfstest.AssertOutsideIntact(t, outside)
		assertOnly(t, filepath.Dir(root), "rootfs")
		assertOnly(t, filepath.Dir(filepath.Dir(root)), "b")
		if st.Bytes > declared {
			t.Fatalf("wrote %d bytes, the accepted headers declared %d", st.Bytes, declared)
		}
		if err != nil {
			return
		}
		// Round trip: what one extraction made packs and extracts again
		// to the same tree.
		var packed bytes.Buffer
		if _, err := tarfs.Pack(&packed, root, tarfs.PackOptions{}); err != nil {
			t.Fatalf("packing what was extracted: %v", err)
		}
		again := filepath.Join(t.TempDir(), "again")
		if err := os.Mkdir(again, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := extractWith(t, again, tarfs.Options{}, packed.Bytes(), nil); err != nil {
			t.Fatalf("extracting what was packed: %v", err)
		}
		if a, b := tarfstest.Tree(t, root), tarfstest.Tree(t, again); a != b {
			t.Fatalf("round trip differs:\nextracted:\n%s\nagain:\n%s", a, b)
		}
	})
}

// extractWith unpacks stream into root with opts, before seeing each header.
func extractWith(t *testing.T, root string, opts tarfs.Options, stream []byte, before func(*tar.Header) error) (tarfs.Stats, error) {
	t.Helper()
	r, err := tarfs.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x := tarfs.NewExtractor(r, opts)
	err = x.Extract(bytes.NewReader(stream), before)
	return x.Stats(), err
}

// assertOnly checks that directory dir holds exactly names.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}
