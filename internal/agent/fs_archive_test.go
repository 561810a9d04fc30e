package agent_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// tarEntry is one entry of a test archive.
type tarEntry = ocitest.File

// tarStream is an archive of entries.
func tarStream(t *testing.T, entries ...tarEntry) []byte { return ocitest.Tar(t, entries...) }

func unpack(c *agentclient.Client, dir string, r io.Reader) (*agentv1.FsUnpackResponse, error) {
	return c.Unpack(context.Background(), &agentv1.FsUnpackHeader{Path: dir}, r, nil)
}

// TestFsUnpackAndPack unpacks an archive into a missing directory, packs
// it again and finds the same tree.
func TestFsUnpackAndPack(t *testing.T) {
	c, d := fsTree(t)
	stream := tarStream(t,
		tarEntry{Name: "./", Type: tar.TypeDir, Mode: 0o700},
		tarEntry{Name: "bin/run.sh", Body: "#!/bin/sh\n", Mode: 0o755},
		tarEntry{Name: "/etc/conf", Body: "absolute, inside", Mode: 0o600},
		tarEntry{Name: "bin/link", Linkname: "run.sh", Type: tar.TypeSymlink},
		tarEntry{Name: "bin/hard", Linkname: "bin/run.sh", Type: tar.TypeLink},
		tarEntry{Name: "empty/", Type: tar.TypeDir, Mode: 0o750},
		tarEntry{Name: "dev/null", Type: tar.TypeChar},
	)
	dst := d + "/new/dst"
	resp, err := unpack(c, dst, bytes.NewReader(stream))
	wantKind(t, err, none)
	// The root's own entry and implied parents are not entries written.
	if resp.GetEntries() != 5 || resp.GetBytes() != 26 || resp.GetSkipped() != 1 {
		t.Errorf("unpack answered %v", resp)
	}
	for p, want := range map[string]string{"bin/run.sh": "#!/bin/sh\n", "etc/conf": "absolute, inside", "bin/hard": "#!/bin/sh\n"} {
		if got := readFile(t, filepath.Join(dst, p)); got != want {
			t.Errorf("%s = %q", p, got)
		}
	}
	if fi, err := os.Stat(dst + "/empty"); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("empty/: %v %v", fi, err)
	}
	if _, err := os.Lstat(dst + "/dev/null"); !os.IsNotExist(err) {
		t.Errorf("a device node was made: %v", err)
	}

	entry, r, err := c.Pack(context.Background(), &agentv1.FsPackRequest{Path: dst})
	wantKind(t, err, none)
	defer r.Close()
	if !entry.GetIsDir() || entry.GetName() != "dst" {
		t.Errorf("pack entry %v", entry)
	}
	again := t.TempDir()
	root, err := tarfs.OpenRoot(again)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	x := tarfs.NewExtractor(root, tarfs.Options{})
	if err := x.Extract(r, nil); err != nil {
		t.Fatal(err)
	}
	// bin/, bin/hard, bin/link, bin/run.sh, empty/, etc/, etc/conf
	if st := x.Stats(); st.Entries != 7 || st.Bytes != 26 {
		t.Errorf("the packed tree extracts to %+v", st)
	}
	if target, err := os.Readlink(again + "/bin/link"); err != nil || target != "run.sh" {
		t.Errorf("symlink: %q %v", target, err)
	}
	if fi, err := os.Stat(again + "/bin/run.sh"); err != nil || fi.Mode().Perm() != 0o755 || !fi.ModTime().Equal(ocitest.Epoch) {
		t.Errorf("run.sh: %v %v", fi, err)
	}

	_, _, err = c.Pack(context.Background(), &agentv1.FsPackRequest{Path: d + "/a.txt"})
	wantKind(t, err, wrongType)
	_, _, err = c.Pack(context.Background(), &agentv1.FsPackRequest{Path: d + "/nope"})
	wantKind(t, err, notFound)
	_, err = unpack(c, d+"/a.txt", bytes.NewReader(stream))
	wantKind(t, err, wrongType)
	_, err = unpack(c, "relative", bytes.NewReader(stream))
	wantKind(t, err, invalid)
}

// TestFsUnpackHostile: archives that try to write outside the directory
// fail (or land inside), and nothing outside changes.
func TestFsUnpackHostile(t *testing.T) {
	c, d := fsTree(t)
	outside := d + "/sub" // holds b.go, which no archive may touch
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    agentv1.FsErrorKind
	}{
		{"dot-dot", []tarEntry{{Name: "../sub/b.go", Body: "pwned"}}, invalid},
		{"absolute", []tarEntry{{Name: outside + "/b.go", Body: "inside"}}, none},
		{"through a symlink", []tarEntry{{Name: "esc", Linkname: outside, Type: tar.TypeSymlink}, {Name: "esc/b.go", Body: "pwned"}}, notFound},
		{"hard link out", []tarEntry{{Name: "stolen", Linkname: "../sub/b.go", Type: tar.TypeLink}}, invalid},
		{"hard link to an absolute path", []tarEntry{{Name: "stolen", Linkname: outside + "/b.go", Type: tar.TypeLink}}, notFound},
		{"garbage", nil, invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			stream := []byte(strings.Repeat("garbage!", 200))
			if tc.entries != nil {
				stream = tarStream(t, tc.entries...)
			}
			_, err := unpack(c, dst, bytes.NewReader(stream))
			wantKind(t, err, tc.want)
			if got := readFile(t, outside+"/b.go"); got != "package b\n// hello\n" {
				t.Errorf("sub/b.go is now %q", got)
			}
			if fi, err := os.Stat(outside + "/b.go"); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("sub/b.go: %v", err)
			}
		})
	}
}

// TestFsUnpackCutOff: a source that fails midway aborts the call; the
// entries before stay, the one being written does not.
func TestFsUnpackCutOff(t *testing.T) {
	c, d := fsTree(t)
	stream := tarStream(t, tarEntry{Name: "first", Body: "whole"}, tarEntry{Name: "second", Body: strings.Repeat("x", 3<<20)})
	broken := errors.New("client went away")
	// The source fails once the agent has written first and begun second.
	failing := readerFunc(func([]byte) (int, error) {
		if !testutil.Poll(hang, func() bool { _, err := os.Lstat(d + "/cut/second"); return err == nil }) {
			return 0, errors.New("the agent never began second")
		}
		return 0, broken
	})
	_, err := unpack(c, d+"/cut", io.MultiReader(bytes.NewReader(stream[:agentclient.ChunkBytes]), failing))
	var se *agentclient.SourceError
	if !errors.As(err, &se) || !errors.Is(err, broken) {
		t.Fatalf("unpack of a failing source: %v", err)
	}
	// The agent notices the cancelled call on its own time.
	testutil.Eventually(t, 2*time.Minute, func() bool {
		_, err := os.Lstat(d + "/cut/second")
		return os.IsNotExist(err)
	}, "the partial file goes away")
	if got := readFile(t, d+"/cut/first"); got != "whole" {
		t.Errorf("first = %q", got)
	}
	// A stream that ends inside an entry, sent whole, is a bad archive.
	_, err = unpack(c, d+"/short", bytes.NewReader(stream[:2<<20]))
	wantKind(t, err, invalid)
}

// TestFsUnpackAsUser: an unpack as the image's user makes the user's
// files, read-only directories of the archive included, and cannot write
// where the user may not.
func TestFsUnpackAsUser(t *testing.T) {
	d, c := userAgent(t)
	stream := tarStream(t,
		tarEntry{Name: "ro/", Type: tar.TypeDir, Mode: 0o555},
		tarEntry{Name: "ro/f", Body: "x", Mode: 0o444},
		tarEntry{Name: "ro/sub/g", Body: "y", Mode: 0o640},
		tarEntry{Name: "suid", Body: "z", Mode: 0o4755},
	)
	dst := d + "/home/unpacked"
	_, err := unpack(c, dst, bytes.NewReader(stream))
	wantKind(t, err, none)
	for _, p := range []string{dst, dst + "/ro", dst + "/ro/f", dst + "/ro/sub/g", dst + "/suid"} {
		if uid, gid := owner(t, p); uid != testUID || gid != testGID {
			t.Errorf("%s is owned by %d:%d, want the user's", p, uid, gid)
		}
	}
	if fi, err := os.Stat(dst + "/ro"); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("ro/: %v %v", fi, err)
	}
	_, err = unpack(c, d+"/rootdir/x", bytes.NewReader(stream))
	wantKind(t, err, permission)
	_, err = unpack(c, d+"/rootdir", bytes.NewReader(stream))
	wantKind(t, err, permission)
	if left, _ := os.ReadDir(d + "/rootdir"); len(left) != 0 {
		t.Errorf("the user unpacked into root's directory: %v", left)
	}
	// The link the user planted to root's file is not followed by a pack,
	// and a pack of a directory the user cannot read is refused.
	_, r, err := c.Pack(context.Background(), &agentv1.FsPackRequest{Path: d + "/home"})
	wantKind(t, err, none)
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || bytes.Contains(b, []byte("s3cret")) {
		t.Errorf("pack of the user's home: %v, secret inside: %v", err, bytes.Contains(b, []byte("s3cret")))
	}
	if err := os.Chmod(d+"/rootdir", 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Pack(context.Background(), &agentv1.FsPackRequest{Path: d + "/rootdir"})
	wantKind(t, err, permission)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
