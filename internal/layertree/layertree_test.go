package layertree

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// layer writes a tar of entries as gVisor's tar of an upper layer does.
func layer(t *testing.T, path string, hdrs ...*tar.Header) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname))
		}
		body := h.Linkname
		if h.Typeflag == tar.TypeReg {
			h.Linkname = ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// file is a regular file entry whose content rides in Linkname (layer).
func file(name, content string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Linkname: content}
}

func dir(name string, opaque bool) *tar.Header {
	h := &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX}
	if opaque {
		h.PAXRecords = map[string]string{paxOpaque: "y"}
	}
	return h
}

func whiteoutEntry(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeChar}
}

// TestUnpackAndWrite: a layer's whiteouts and opaque directories become
// overlayfs's own in the tree; a device node is left out; Write of the
// tree followed by another layer unpacks to both, the later one winning
// (an opaque directory of it hides the tree's files).
func TestUnpackAndWrite(t *testing.T) {
	testutil.RequiresRoot(t) // whiteouts are device nodes, opaque marks trusted xattrs
	tmp := t.TempDir()
	first := filepath.Join(tmp, "first.tar")
	layer(t, first,
		dir("./", false), dir("./app/", true), file("./app/a.txt", "a"), file("./app/b.txt", "b"),
		whiteoutEntry("./etc/hostname"), &tar.Header{Name: "./dev-null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3})
	tree := filepath.Join(tmp, "tree")
	if err := Unpack(first, tree); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(tree, "etc", "hostname"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("the whiteout: %+v %v", st, err)
	}
	if !isOpaque(filepath.Join(tree, "app"), make([]byte, 1)) {
		t.Error("app is not opaque")
	}
	if _, err := os.Lstat(filepath.Join(tree, "dev-null")); !os.IsNotExist(err) {
		t.Errorf("a device node was made: %v", err)
	}
	if err := Unpack(first, tree); err != nil { // there already: kept
		t.Fatal(err)
	}

	upper := filepath.Join(tmp, "upper.tar")
	layer(t, upper, dir("./", false), dir("./app/", true), file("./app/c.txt", "c"), whiteoutEntry("./gone"))
	var both bytes.Buffer
	tw := tar.NewWriter(&both)
	if err := Write(tw, tree); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(upper)
	if err != nil {
		t.Fatal(err)
	}
	both.Write(b)
	merged := filepath.Join(tmp, "merged.tar")
	if err := os.WriteFile(merged, both.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	if err := Unpack(merged, out); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(out, "app", "*"))
	if len(names) != 1 || filepath.Base(names[0]) != "c.txt" || !isOpaque(filepath.Join(out, "app"), make([]byte, 1)) {
		t.Errorf("app after both layers: %v", names)
	}
	for _, p := range []string{"etc/hostname", "gone"} {
		if err := unix.Lstat(filepath.Join(out, p), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			t.Errorf("whiteout %s after both layers: %v", p, err)
		}
	}
}
