package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutch-dev/hutch/client"
)

// TestExtractLocalIsUntrusting extracts a hostile tar.gz from a sandbox:
// nothing lands outside LOCAL, a link is not written through, device nodes
// and set-id bits do not arrive, and what is there is the caller's.
func TestExtractLocalIsUntrusting(t *testing.T) {
	base := t.TempDir()
	outside, local := filepath.Join(base, "outside"), filepath.Join(base, "local")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range []*tar.Header{
		{Name: "ok/file", Mode: 0o644, Size: 2},
		{Name: "suid", Mode: 0o6755, Size: 2},
		{Name: "esc", Typeflag: tar.TypeSymlink, Linkname: outside},
		{Name: "esc/planted", Mode: 0o644, Size: 2},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("hi")[:h.Size])
	}
	tw.Close()
	zw.Close()
	st, err := extractLocal(bytes.NewReader(buf.Bytes()), local, 0)
	if err == nil {
		t.Fatal("a file through a symlink out of LOCAL was extracted")
	}
	if st.Entries != 3 {
		t.Errorf("stats %+v", st)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("outside now holds %v", entries)
	}
	if fi, err := os.Stat(filepath.Join(local, "suid")); err != nil || fi.Mode() != 0o755 {
		t.Errorf("suid: %v %v, want 0755", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(local, "esc")); err != nil || target != outside {
		t.Errorf("the link: %q %v", target, err)
	}

	// Devices are skipped, and .. never climbs out.
	buf.Reset()
	tw = tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "dev/sda", Typeflag: tar.TypeBlock, Devmajor: 8})
	tw.WriteHeader(&tar.Header{Name: "../outside/x", Mode: 0o644})
	tw.Close()
	st, err = extractLocal(&buf, local, 0)
	if err == nil || st.Skipped != 1 {
		t.Errorf("a .. entry: %v, stats %+v", err, st)
	}
	if _, err := os.Lstat(filepath.Join(local, "dev/sda")); !os.IsNotExist(err) {
		t.Errorf("a device node: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("outside now holds %v", entries)
	}
	if fi, err := os.Stat(local); err != nil || fi.Mode()&fs.ModePerm != 0o755 {
		t.Errorf("LOCAL: %v %v", fi, err)
	}
}

// TestExtractLocalBound checks that a directory's download stops at the
// file that passes --max-size, counted as the headers say.
func TestExtractLocalBound(t *testing.T) {
	local := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"a", "b"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 600})
		tw.Write(bytes.Repeat([]byte{0}, 600))
	}
	tw.Close()
	_, err := extractLocal(bytes.NewReader(buf.Bytes()), local, 1000)
	if !client.IsDownloadTooLarge(err) {
		t.Fatalf("1200 bytes under a bound of 1000: %v", err)
	}
	if _, err := os.Stat(filepath.Join(local, "b")); !os.IsNotExist(err) {
		t.Errorf("the file past the bound: %v", err)
	}
	if _, err := extractLocal(bytes.NewReader(buf.Bytes()), t.TempDir(), 1200); err != nil {
		t.Errorf("1200 bytes under a bound of 1200: %v", err)
	}
}
