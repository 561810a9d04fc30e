package tarfs_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/tarfs"
	"github.com/hutch-dev/hutch/internal/tarfs/tarfstest"
)

// entry is one tar entry of a test stream.
type entry = ocitest.File

var (
	reg     = ocitest.Reg
	dir     = ocitest.Dir
	sym     = ocitest.Symlink
	hard    = ocitest.Hardlink
	epoch   = ocitest.Epoch
	fixture = tarfstest.Fixture
)

// tarOf is a tar stream of entries.
func tarOf(t *testing.T, entries ...entry) []byte { return ocitest.Tar(t, entries...) }

// extract unpacks stream into root with opts.
func extract(t *testing.T, root string, opts tarfs.Options, stream io.Reader) (tarfs.Stats, error) {
	t.Helper()
	r, err := tarfs.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x := tarfs.NewExtractor(r, opts)
	err = x.Extract(stream, nil)
	return x.Stats(), err
}

func describe(t *testing.T, root, rel string) string { return tarfstest.Describe(t, root, rel) }

// TestExtractStaysInside feeds streams that try to leave the root: each
// fails or lands inside, and the files next to the root stay as they were.
func TestExtractStaysInside(t *testing.T) {
	const escape = "../../../outside" // the outside directory, from the root
	tests := []struct {
		name    string
		entries func(outside string) []entry
		unsafe  bool              // the error matches ErrUnsafe
		errno   syscall.Errno     // or this system error (0: no error)
		want    map[string]string // inside the root
	}{
		{name: "dot-dot entry", unsafe: true,
			entries: func(string) []entry { return []entry{reg(escape+"/secret", "pwned", 0o644)} }},
		{name: "dot-dot in the middle", unsafe: true,
			entries: func(string) []entry { return []entry{reg("x/../../y", "pwned", 0o644)} }},
		{name: "absolute names are relative to the root",
			entries: func(outside string) []entry {
				return []entry{reg(outside+"/secret", "inside", 0o644), reg("/abs", "a", 0o644)}
			},
			want: map[string]string{"abs": "file:a"}},
		{name: "file through an absolute symlink", errno: syscall.ENOENT,
			entries: func(outside string) []entry { return []entry{sym("esc", outside), reg("esc/new", "pwned", 0o644)} },
			want:    map[string]string{"esc": "link:"}},
		{name: "file through a relative symlink resolves inside",
			entries: func(string) []entry {
				return []entry{dir("outside", 0o755), sym("esc", escape), reg("esc/secret", "inside", 0o644)}
			},
			want: map[string]string{"outside/secret": "file:inside", "esc": "link:" + escape}},
		{name: "file replaces a symlink instead of writing through it",
			entries: func(outside string) []entry { return []entry{sym("x", outside+"/secret"), reg("x", "new", 0o644)} },
			want:    map[string]string{"x": "file:new"}},
		{name: "directory replaces a symlink instead of entering it",
			entries: func(outside string) []entry {
				return []entry{sym("d", outside), dir("d", 0o755), reg("d/secret", "new", 0o644)}
			},
			want: map[string]string{"d": "dir", "d/secret": "file:new"}},
		{name: "hard link out", unsafe: true,
			entries: func(string) []entry { return []entry{hard("stolen", escape+"/secret")} }},
		{name: "hard link to an absolute path resolves inside", errno: syscall.ENOENT,
			entries: func(outside string) []entry { return []entry{hard("stolen", outside+"/secret")} }},
		{name: "hard link through a symlink", errno: syscall.ENOENT,
			entries: func(outside string) []entry { return []entry{sym("esc", outside), hard("stolen", "esc/secret")} }},
		{name: "hard link to a directory", unsafe: true,
			entries: func(string) []entry { return []entry{dir("d", 0o755), hard("l", "d")} }},
		{name: "hard link inside",
			entries: func(string) []entry { return []entry{reg("f", "x", 0o644), hard("l", "/f")} },
			want:    map[string]string{"l": "file:x"}},
		{name: "a file cannot be written under a file", errno: syscall.ENOTDIR,
			entries: func(string) []entry { return []entry{reg("f", "file", 0o644), reg("f/inner", "x", 0o644)} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := fixture(t)
			_, err := extract(t, root, tarfs.Options{}, bytes.NewReader(tarOf(t, tt.entries(outside)...)))
			switch {
			case tt.unsafe && !errors.Is(err, tarfs.ErrUnsafe):
				t.Fatalf("error %v, want one of ErrUnsafe", err)
			case tt.errno != 0 && !errors.Is(err, tt.errno):
				t.Fatalf("error %v, want %v", err, tt.errno)
			case !tt.unsafe && tt.errno == 0 && err != nil:
				t.Fatalf("unexpected error: %v", err)
			}
			for p, want := range tt.want {
				if want == "link:" {
					want += outside
				}
				if got := describe(t, root, p); got != want {
					t.Errorf("%s = %s, want %s", p, got, want)
				}
			}
			tarfstest.AssertOutsideIntact(t, outside)
		})
	}
}

// TestExtractAbsoluteLandsInside: an entry named by the host path of a
// file outside the root lands under the root at that path.
func TestExtractAbsoluteLandsInside(t *testing.T) {
	root, outside := fixture(t)
	if _, err := extract(t, root, tarfs.Options{}, bytes.NewReader(tarOf(t, reg(outside+"/secret", "inside", 0o644)))); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, root, outside+"/secret"); got != "file:inside" {
		t.Errorf("%s under the root = %s", outside, got)
	}
	tarfstest.AssertOutsideIntact(t, outside)
}

// TestExtractSkipsDevices: device nodes and sockets are never made, only
// counted; the rest of the stream applies.
func TestExtractSkipsDevices(t *testing.T) {
	root, _ := fixture(t)
	var skipped []string
	stats, err := extract(t, root, tarfs.Options{Skipped: func(h *tar.Header) { skipped = append(skipped, h.Name) }},
		bytes.NewReader(tarOf(t, entry{Name: "dev/null", Type: tar.TypeChar}, entry{Name: "dev/sda", Type: tar.TypeBlock},
			reg("dev/ok", "y", 0o644), entry{Name: "fifo", Type: tar.TypeFifo, Mode: 0o600})))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"dev/null": "missing", "dev/sda": "missing", "dev/ok": "file:y", "fifo": "fifo"} {
		if got := describe(t, root, p); got != want {
			t.Errorf("%s = %s, want %s", p, got, want)
		}
	}
	if stats != (tarfs.Stats{Entries: 2, Bytes: 1, Skipped: 2}) || len(skipped) != 2 {
		t.Errorf("stats %+v, skipped %v", stats, skipped)
	}
}

// TestExtractMetadata: modes (read-only directories applied last), times,
// and set-id bits kept or dropped.
func TestExtractMetadata(t *testing.T) {
	for _, drop := range []bool{false, true} {
		root, _ := fixture(t)
		stream := tarOf(t, dir("ro", 0o555), reg("ro/tool", "t", 0o4755), reg("ro/x", "x", 0o600),
			sym("ro/link", "tool"), dir("ro/sub", 0o2750), dir("deep/er/est", 0o700), dir("deep", 0o500))
		if _, err := extract(t, root, tarfs.Options{DropSetID: drop}, bytes.NewReader(stream)); err != nil {
			t.Fatal(err)
		}
		setuid, setgid := fs.ModeSetuid, fs.ModeSetgid
		if drop {
			setuid, setgid = 0, 0
		}
		for p, want := range map[string]fs.FileMode{
			"ro": fs.ModeDir | 0o555, "ro/tool": setuid | 0o755, "ro/x": 0o600, "ro/sub": fs.ModeDir | setgid | 0o750,
			"deep": fs.ModeDir | 0o500, "deep/er/est": fs.ModeDir | 0o700,
		} {
			st, err := os.Lstat(filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != want {
				t.Errorf("drop %v: %s: mode %v, want %v", drop, p, st.Mode(), want)
			}
			if !st.ModTime().Equal(epoch) {
				t.Errorf("%s: mtime %v, want %v", p, st.ModTime(), epoch)
			}
		}
		if st, err := os.Lstat(filepath.Join(root, "ro/link")); err != nil || !st.ModTime().Equal(epoch) {
			t.Errorf("symlink: %v %v", st, err)
		}
	}
}

// TestExtractKeepsDirectories: without ReplaceDirs an entry replaces a
// file, a symlink or an empty directory, never a directory that holds
// something; with it, the directory goes.
func TestExtractKeepsDirectories(t *testing.T) {
	for _, replace := range []bool{false, true} {
		root, _ := fixture(t)
		for _, d := range []string{"full/sub", "empty"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "file"), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		stream := tarOf(t, reg("file", "new", 0o644), reg("empty", "was empty", 0o644), reg("full", "x", 0o644))
		_, err := extract(t, root, tarfs.Options{ReplaceDirs: replace}, bytes.NewReader(stream))
		want := map[string]string{"file": "file:new", "empty": "file:was empty", "full": "dir", "full/sub": "dir"}
		if replace {
			want["full"], want["full/sub"] = "file:x", "missing"
			if err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatalf("a file over a full directory: %v, want ENOTEMPTY", err)
		}
		for p, w := range want {
			if got := describe(t, root, p); got != w {
				t.Errorf("replace %v: %s = %s, want %s", replace, p, got, w)
			}
		}
	}
}

// TestExtractCutOff: a stream that fails inside a file leaves the entries
// before it (directories with their modes) and removes the partial file; the stream's own error comes
// out, while a stream that merely ends early is the archive's fault.
func TestExtractCutOff(t *testing.T) {
	stream := tarOf(t, dir("d", 0o750), reg("first", "complete", 0o644), reg("second", strings.Repeat("x", 4096), 0o644))
	cut := len(stream) - 2048 // inside second's content
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		src  io.Reader
		want error
	}{
		{"source fails", io.MultiReader(bytes.NewReader(stream[:cut]), iotest.ErrReader(broken)), broken},
		{"stream ends early", bytes.NewReader(stream[:cut]), tarfs.ErrUnsafe},
		{"garbage", strings.NewReader(strings.Repeat("not a tar stream at all ", 40)), tarfs.ErrUnsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := fixture(t)
			stats, err := extract(t, root, tarfs.Options{}, tc.src)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.name == "garbage" {
				return
			}
			if got := describe(t, root, "first"); got != "file:complete" {
				t.Errorf("first = %s", got)
			}
			if got := describe(t, root, "second"); got != "missing" {
				t.Errorf("the partial file: %s", got)
			}
			if stats.Entries != 2 || stats.Bytes != 8 {
				t.Errorf("stats %+v", stats)
			}
			if st, err := os.Stat(filepath.Join(root, "d")); err != nil || st.Mode() != fs.ModeDir|0o750 {
				t.Errorf("a directory unpacked before the failure: %v %v", st.Mode(), err)
			}
		})
	}
}
