package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fixture, describe and assertOutsideIntact are tarfstest's: a rootfs
// three levels under a directory whose outside/secret and outside/victim
// no layer may reach.
var (
	fixture             = tarfstest.Fixture
	describe            = tarfstest.Describe
	assertOutsideIntact = tarfstest.AssertOutsideIntact
)

// apply unpacks layers (each a list of entries) in order into rootfs and
// returns the error of the first one that fails.
func apply(t *testing.T, rootfs string, layers ...[]ocitest.File) error {
	t.Helper()
	u, err := newUnpacker(rootfs, DefaultMaxUnpackedBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for i, l := range layers {
		if err := u.layer(bytes.NewReader(ocitest.Tar(t, l...))); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return nil
}

func linkCount(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(st.Sys().(*syscall.Stat_t).Nlink)
}

func TestUnpackLayers(t *testing.T) {
	reg, dir, sym, hard := ocitest.Reg, ocitest.Dir, ocitest.Symlink, ocitest.Hardlink
	tests := []struct {
		name   string
		layers [][]ocitest.File
		want   map[string]string // path → describe()
	}{
		{
			name: "files, parents created, links",
			layers: [][]ocitest.File{{
				reg("/etc/hostname", "box", 0o644), reg("./usr/lib/deep/file", "x", 0o600),
				sym("bin", "usr/bin"), dir("usr/bin", 0o755), reg("bin/tool", "t", 0o755),
				hard("usr/lib/hard", "usr/lib/deep/file"), ocitest.File{Name: "run/fifo", Type: tar.TypeFifo},
			}},
			want: map[string]string{"etc/hostname": "file:box", "usr/lib/deep/file": "file:x", "bin": "link:usr/bin",
				"usr/bin/tool": "file:t", "usr/lib/hard": "file:x", "run/fifo": "fifo"},
		},
		{
			name: "whiteouts delete lower entries and never land",
			layers: [][]ocitest.File{
				{reg("a/x", "1", 0o644), reg("a/y", "2", 0o644), reg("b/z", "3", 0o644), sym("c", "/etc")},
				{ocitest.Whiteout("a", "x"), ocitest.Whiteout("", "b"), ocitest.Whiteout("", "c"), ocitest.Whiteout("", "never")},
			},
			want: map[string]string{"a/x": "missing", "a/y": "file:2", "b": "missing", "c": "missing",
				"a/.wh.x": "missing", ".wh.b": "missing", ".wh.never": "missing"},
		},
		{
			name: "a whiteout spares its own layer",
			layers: [][]ocitest.File{
				{reg("f", "lower", 0o644)},
				{reg("f", "upper", 0o644), ocitest.Whiteout("", "f")},
			},
			want: map[string]string{"f": "file:upper"},
		},
		{
			name: "opaque directory hides lower contents, keeps its own",
			layers: [][]ocitest.File{
				{reg("d/old", "o", 0o644), reg("d/sub/deep", "o", 0o644), reg("d/keep/lower", "o", 0o644), reg("other", "o", 0o644)},
				{dir("d", 0o755), reg("d/new", "n", 0o644), reg("d/keep/upper", "n", 0o644), ocitest.Opaque("d"), reg("d/after", "a", 0o644)},
			},
			want: map[string]string{"d/old": "missing", "d/sub": "missing", "d/new": "file:n", "d/after": "file:a",
				"d/keep/upper": "file:n", "d/keep/lower": "missing", "other": "file:o", "d/.wh..wh..opq": "missing"},
		},
		{
			name: "upper entries replace lower ones of another type",
			layers: [][]ocitest.File{
				{reg("f2d", "file", 0o644), reg("d2f/x", "x", 0o644), sym("l2f", "f2d")},
				{dir("f2d", 0o755), reg("f2d/inner", "i", 0o644), reg("d2f", "now a file", 0o644), reg("l2f", "real", 0o644)},
			},
			want: map[string]string{"f2d/inner": "file:i", "d2f": "file:now a file", "l2f": "file:real", "f2d": "dir"},
		},
		{
			name: "hard link across layers shares the inode",
			layers: [][]ocitest.File{
				{reg("usr/bin/python3.11", "py", 0o755)},
				{hard("usr/bin/python3", "/usr/bin/python3.11")},
			},
			want: map[string]string{"usr/bin/python3": "file:py"},
		},
		{
			name: "device nodes are skipped",
			layers: [][]ocitest.File{{
				{Name: "dev/null", Type: tar.TypeChar}, {Name: "dev/sda", Type: tar.TypeBlock}, reg("dev/ok", "y", 0o644),
			}},
			want: map[string]string{"dev/null": "missing", "dev/sda": "missing", "dev/ok": "file:y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rootfs, outside := fixture(t)
			if err := apply(t, rootfs, tt.layers...); err != nil {
				t.Fatal(err)
			}
			for p, want := range tt.want {
				if got := describe(t, rootfs, p); got != want {
					t.Errorf("%s = %s, want %s", p, got, want)
				}
			}
			assertOutsideIntact(t, outside)
		})
	}
}

// TestUnpackStaysInside feeds layers that try to read or write the host
// files next to the rootfs: each either fails or lands inside the rootfs.
func TestUnpackStaysInside(t *testing.T) {
	reg, sym, hard := ocitest.Reg, ocitest.Symlink, ocitest.Hardlink
	// escape is the host path of the outside directory as seen from the
	// rootfs: three levels up (rootfs, b, a), then outside.
	const escape = "../../../outside"
	tests := []struct {
		name    string
		layers  func(outside string) [][]ocitest.File
		wantErr string            // "" when the layer applies (inside)
		want    map[string]string // inside the rootfs
	}{
		{name: "dot-dot entry", wantErr: "climbs out",
			layers: func(string) [][]ocitest.File {
				return [][]ocitest.File{{reg("../../../outside/secret", "pwned", 0o644)}}
			}},
		{name: "dot-dot in the middle", wantErr: "climbs out",
			layers: func(string) [][]ocitest.File { return [][]ocitest.File{{reg("etc/../../x", "pwned", 0o644)}} }},
		{name: "hard link out", wantErr: "climbs out",
			layers: func(string) [][]ocitest.File { return [][]ocitest.File{{hard("stolen", escape+"/secret")}} }},
		{name: "hard link through an absolute symlink", wantErr: "no such file",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{sym("esc", outside)}, {hard("stolen", "esc/secret")}}
			}},
		{name: "write through a relative symlink resolves inside",
			layers: func(string) [][]ocitest.File {
				return [][]ocitest.File{{reg("outside/.keep", "", 0o644), sym("esc", escape)}, {reg("esc/secret", "inside", 0o644)}}
			},
			want: map[string]string{"outside/secret": "file:inside", "esc": "link:" + escape}},
		{name: "write through an absolute symlink resolves inside", wantErr: "no such file",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{sym("esc", outside)}, {reg("esc/new", "pwned", 0o644)}}
			}},
		{name: "whiteout through a symlink",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{sym("esc", outside)}, {ocitest.Whiteout("esc", "victim")}}
			},
			want: map[string]string{"esc": "link:"}},
		{name: "opaque through a symlink",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{reg("outside/keep", "k", 0o644), sym("esc", escape)}, {ocitest.Opaque("esc")}}
			},
			want: map[string]string{"outside": "dir", "outside/keep": "missing"}},
		{name: "a later layer cannot write under a file", wantErr: "not a directory",
			layers: func(string) [][]ocitest.File {
				return [][]ocitest.File{{reg("f", "file", 0o644)}, {reg("f/inner", "x", 0o644)}}
			}},
		{name: "file replaces a symlink instead of writing through it",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{sym("x", outside+"/secret")}, {reg("x", "new", 0o644)}}
			},
			want: map[string]string{"x": "file:new"}},
		{name: "directory replaces a symlink instead of entering it",
			layers: func(outside string) [][]ocitest.File {
				return [][]ocitest.File{{sym("d", outside)}, {ocitest.Dir("d", 0o755), reg("d/secret", "new", 0o644)}}
			},
			want: map[string]string{"d": "dir", "d/secret": "file:new"}},
		{name: "bad whiteout", wantErr: "invalid whiteout",
			layers: func(string) [][]ocitest.File { return [][]ocitest.File{{reg("etc/.wh.", "", 0o644)}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rootfs, outside := fixture(t)
			err := apply(t, rootfs, tt.layers(outside)...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			for p, want := range tt.want {
				got := describe(t, rootfs, p)
				if want == "link:" {
					want = "link:" + outside
				}
				if got != want {
					t.Errorf("%s = %s, want %s", p, got, want)
				}
			}
			assertOutsideIntact(t, outside)
		})
	}
}

func TestUnpackMetadata(t *testing.T) {
	files := []ocitest.File{
		ocitest.Dir("srv", 0o750), ocitest.Reg("srv/tool", "t", 0o4755), ocitest.Reg("srv/ro", "r", 0o444),
		ocitest.Symlink("srv/link", "tool"), ocitest.Owned(ocitest.Reg("srv/owned", "o", 0o640), 1000, 2000),
	}
	rootfs, _ := fixture(t)
	if err := apply(t, rootfs, files); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		mode fs.FileMode
	}{
		{"srv", fs.ModeDir | 0o750}, {"srv/tool", fs.ModeSetuid | 0o755}, {"srv/ro", 0o444}, {"srv/owned", 0o640},
	} {
		st, err := os.Lstat(filepath.Join(rootfs, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != tt.mode {
			t.Errorf("%s: mode %v, want %v", tt.path, st.Mode(), tt.mode)
		}
		if !st.ModTime().Equal(ocitest.Epoch) {
			t.Errorf("%s: mtime %v, want %v", tt.path, st.ModTime(), ocitest.Epoch)
		}
	}
	st, err := os.Lstat(filepath.Join(rootfs, "srv/link"))
	if err != nil || !st.ModTime().Equal(ocitest.Epoch) {
		t.Errorf("symlink: %v, mtime %v", err, st.ModTime())
	}
	t.Run("ownership", func(t *testing.T) {
		testutil.RequiresRoot(t) // only root can give files other owners
		st, err := os.Lstat(filepath.Join(rootfs, "srv/owned"))
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 1000 || sys.Gid != 2000 {
			t.Errorf("owner %d:%d, want 1000:2000", sys.Uid, sys.Gid)
		}
	})
}

func TestUnpackRejectsBadStreams(t *testing.T) {
	rootfs := t.TempDir()
	u, err := newUnpacker(rootfs, DefaultMaxUnpackedBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	good := ocitest.Tar(t, ocitest.Reg("big", strings.Repeat("x", 4096), 0o644))
	if err := u.layer(io.LimitReader(bytes.NewReader(good), 1000)); err == nil {
		t.Error("a truncated layer unpacked without error")
	}
	if err := u.layer(strings.NewReader("this is not a tar stream, not even close to one...........")); err == nil {
		t.Error("garbage unpacked without error")
	}
}
