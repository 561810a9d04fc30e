package tarfs_test

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/tarfs"
)

// tree describes every entry under dir: type, mode, mtime, content's
// hash or target, one line per path, sorted.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d", rel, st.Mode(), st.ModTime().Unix())
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %d bytes sha256 %x", len(b), sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// sourceTree makes a directory of every kind of entry Pack stores, a
// socket it leaves out, and a symlink to a directory outside it.
func sourceTree(t *testing.T) (src, outside string) {
	t.Helper()
	base := t.TempDir()
	src, outside = filepath.Join(base, "src"), filepath.Join(base, "outside")
	random := make([]byte, 3<<20+17)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"src/a/b/c", "src/empty", "outside"} {
		must(os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	must(os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.WriteFile(filepath.Join(src, "a/private"), []byte("mine"), 0o600))
	must(os.WriteFile(filepath.Join(src, "a/b/c/random.bin"), random, 0o644))
	must(os.Link(filepath.Join(src, "a/private"), filepath.Join(src, "a/b/hardlink")))
	must(os.Symlink("../run.sh", filepath.Join(src, "a/rel-link")))
	must(os.Symlink(outside, filepath.Join(src, "out-link")))
	must(syscall.Mkfifo(filepath.Join(src, "fifo"), 0o640))
	must(os.Chmod(filepath.Join(src, "a/b"), 0o750))
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	must(err)
	t.Cleanup(func() { l.Close() })
	mtime := time.Unix(1_700_000_000, 0)
	must(filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	}))
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
	if stats.Skipped != 1 || stats.Entries != 11 || stats.Bytes != 3<<20+17+len64("#!/bin/sh\necho hi\n")+4 {
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
	want := dropLine(tree(t, src), "sock ")
	if got := tree(t, dst); got != want {
		t.Errorf("extracted tree:\n%s\nwant:\n%s", got, want)
	}
	var a, b syscall.Stat_t
	if syscall.Lstat(filepath.Join(dst, "a/private"), &a) != nil || syscall.Lstat(filepath.Join(dst, "a/b/hardlink"), &b) != nil || a.Ino != b.Ino {
		t.Errorf("the hard link is not one: inodes %d and %d", a.Ino, b.Ino)
	}
	if got := tree(t, outside); !strings.Contains(got, "secret") || strings.Count(got, "\n") != 0 {
		t.Errorf("outside: %s", got)
	}
}

func len64(s string) int64 { return int64(len(s)) }

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
// directory outside holds the link, not what it points to, and nothing
// of the outside.
func TestPackNeverFollows(t *testing.T) {
	src, outside := sourceTree(t)
	var buf bytes.Buffer
	if _, err := tarfs.Pack(&buf, src, tarfs.PackOptions{SkipDir: func(rel string) bool { return rel == "a/b" }}); err != nil {
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
	want := "a/ a/b/ a/private a/rel-link empty/ fifo out-link run.sh"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
}
