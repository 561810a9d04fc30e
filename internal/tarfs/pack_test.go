package tarfs_test

import (
	"archive/tar"
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-dev/hutch/internal/tarfs"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
)

// sourceTree is tarfstest.Source with a fifo, which Pack stores, and a
// socket, which it leaves out.
func sourceTree(t *testing.T) (src, outside string) {
	t.Helper()
	src, outside = tarfstest.Source(t)
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(src, "fifo"), tarfstest.Mtime, tarfstest.Mtime); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return src, outside
}

// TestPackRoundTrip: a directory packed and extracted again is the same
// tree, byte for byte, with its modes, times, links and fifos; the socket
// is left out and the symlink to the outside stays a symlink.
func TestPackRoundTrip(t *testing.T) {
	src, outside := sourceTree(t)
	var buf bytes.Buffer
	stats, err := tarfs.Pack(&buf, src, tarfs.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stats != (tarfs.Stats{Entries: tarfstest.SourceEntries + 1, Bytes: tarfstest.SourceBytes, Skipped: 1}) {
		t.Errorf("pack stats %+v", stats)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	xstats, err := extract(t, dst, tarfs.Options{}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if xstats.Entries != stats.Entries || xstats.Bytes != stats.Bytes || xstats.Skipped != 0 {
		t.Errorf("extract stats %+v, pack stats %+v", xstats, stats)
	}
	want := dropLine(tarfstest.Tree(t, src), "sock ")
	if got := tarfstest.Tree(t, dst); got != want {
		t.Errorf("extracted tree:\n%s\nwant:\n%s", got, want)
	}
	var a, b syscall.Stat_t
	if syscall.Lstat(filepath.Join(dst, "data/private"), &a) != nil || syscall.Lstat(filepath.Join(dst, "data/hard"), &b) != nil || a.Ino != b.Ino {
		t.Errorf("the hard link is not one: inodes %d and %d", a.Ino, b.Ino)
	}
	if got := tarfstest.Tree(t, outside); strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, "secret ") {
		t.Errorf("outside: %s", got)
	}
}

// dropLine removes the line starting with prefix from s.
func dropLine(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPackNeverFollows: the stream of a tree with a symlink to a
// directory outside holds the link, not what it points to; a skipped
// directory is stored without its entries; owners are numeric only.
func TestPackNeverFollows(t *testing.T) {
	src, outside := sourceTree(t)
	var buf bytes.Buffer
	if _, err := tarfs.Pack(&buf, src, tarfs.PackOptions{SkipDir: func(rel string) bool { return rel == "data/deep" }}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Name == "out-link" && (hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != outside) {
			t.Errorf("out-link stored as %c -> %q", hdr.Typeflag, hdr.Linkname)
		}
		if hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s has owner names %q %q", hdr.Name, hdr.Uname, hdr.Gname)
		}
	}
	want := "bin/ bin/run.sh data/ data/deep/ data/hard data/private data/run-link empty/ fifo out-link"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
}
