package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fsKind is the FsError kind of err, UNSPECIFIED when it has none.
func fsKind(t *testing.T, err error) agentv1.FsErrorKind {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		return agentv1.FsErrorKind_FS_ERROR_KIND_UNSPECIFIED
	}
	for _, d := range st.Details() {
		if fe, ok := d.(*agentv1.FsError); ok {
			if !strings.Contains(fe.GetMessage(), fe.GetPath()) {
				t.Errorf("message %q does not name the path %q", fe.GetMessage(), fe.GetPath())
			}
			return fe.GetKind()
		}
	}
	return agentv1.FsErrorKind_FS_ERROR_KIND_UNSPECIFIED
}

// Short names of the error kinds.
const (
	none        = agentv1.FsErrorKind_FS_ERROR_KIND_UNSPECIFIED
	invalid     = agentv1.FsErrorKind_FS_ERROR_KIND_INVALID
	notFound    = agentv1.FsErrorKind_FS_ERROR_KIND_NOT_FOUND
	wrongType   = agentv1.FsErrorKind_FS_ERROR_KIND_WRONG_TYPE
	exists      = agentv1.FsErrorKind_FS_ERROR_KIND_EXISTS
	notEmpty    = agentv1.FsErrorKind_FS_ERROR_KIND_NOT_EMPTY
	permission  = agentv1.FsErrorKind_FS_ERROR_KIND_PERMISSION
	badRegex    = agentv1.FsErrorKind_FS_ERROR_KIND_BAD_REGEX
	aborted     = agentv1.FsErrorKind_FS_ERROR_KIND_STREAM_ABORTED
	unsupported = agentv1.FsErrorKind_FS_ERROR_KIND_UNSUPPORTED
)

// fsTree starts an agent and makes a directory tree for it:
//
//	d/a.txt "hello\nworld\n"   d/sub/b.go "package b\n// hello\n"
//	d/bin.dat (NUL bytes)      d/link -> a.txt   d/empty/
func fsTree(t *testing.T) (*agentclient.Client, string) {
	t.Helper()
	a := agenttest.Start(t, agent.Options{}, agentclient.Options{})
	d := t.TempDir()
	for name, content := range map[string]string{
		"a.txt":    "hello\nworld\n",
		"sub/b.go": "package b\n// hello\n",
		"bin.dat":  "hello\x00binary",
	} {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return a.Client, d
}

func wantKind(t *testing.T, err error, want agentv1.FsErrorKind) {
	t.Helper()
	if got := fsKind(t, err); got != want {
		t.Fatalf("error %v: kind %v, want %v", err, got, want)
	}
	if want == none && err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFsLsStat(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	ls, err := c.Ls(ctx, &agentv1.FsLsRequest{Path: d})
	wantKind(t, err, none)
	var names []string
	for _, e := range ls.GetEntries() {
		names = append(names, e.GetName())
		if e.GetName() == "link" && !e.GetIsSymlink() {
			t.Errorf("link entry is not a symlink: %v", e)
		}
		if e.GetName() == "a.txt" && (e.GetSize() != 12 || e.GetMode() != 0o644 || e.GetMtime() == 0) {
			t.Errorf("a.txt entry: %v", e)
		}
	}
	if want := []string{"a.txt", "bin.dat", "empty", "link", "sub"}; !slicesEqual(names, want) {
		t.Errorf("ls names %v, want %v", names, want)
	}

	// A name that is not UTF-8 is listed, not a failure of the listing.
	if err := os.WriteFile(filepath.Join(d, "sub", "bad\xffname"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err = c.Ls(ctx, &agentv1.FsLsRequest{Path: filepath.Join(d, "sub")})
	wantKind(t, err, none)
	if len(ls.GetEntries()) != 2 || ls.GetEntries()[1].GetName() != "bad\uFFFDname" {
		t.Errorf("ls of a directory with a non-UTF-8 name: %v", ls.GetEntries())
	}
	os.Remove(filepath.Join(d, "sub", "bad\xffname"))

	st, err := c.Stat(ctx, &agentv1.FsStatRequest{Path: filepath.Join(d, "link")})
	wantKind(t, err, none)
	if !st.GetIsSymlink() || st.GetName() != "link" {
		t.Errorf("stat of a symlink describes %v", st)
	}

	for _, tc := range []struct {
		name string
		err  error
		want agentv1.FsErrorKind
	}{
		{"ls missing", second(c.Ls(ctx, &agentv1.FsLsRequest{Path: d + "/nope"})), notFound},
		{"ls file", second(c.Ls(ctx, &agentv1.FsLsRequest{Path: d + "/a.txt"})), wrongType},
		{"ls relative", second(c.Ls(ctx, &agentv1.FsLsRequest{Path: "tmp"})), invalid},
		{"stat missing", second(c.Stat(ctx, &agentv1.FsStatRequest{Path: d + "/nope"})), notFound},
		{"stat below a file", second(c.Stat(ctx, &agentv1.FsStatRequest{Path: d + "/a.txt/x"})), wrongType},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKind(t, tc.err, tc.want) })
	}
}

func second[T any](_ T, err error) error { return err }

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestFsMkdir(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		req         *agentv1.FsMkdirRequest
		want        agentv1.FsErrorKind
		wantCreated bool
	}{
		{"new", &agentv1.FsMkdirRequest{Path: d + "/new", Mode: 0o700}, none, true},
		{"exists", &agentv1.FsMkdirRequest{Path: d + "/sub", Mode: 0o755}, exists, false},
		{"exists with parents", &agentv1.FsMkdirRequest{Path: d + "/sub", Mode: 0o755, Parents: true}, none, false},
		{"missing parent", &agentv1.FsMkdirRequest{Path: d + "/x/y", Mode: 0o755}, notFound, false},
		{"parents", &agentv1.FsMkdirRequest{Path: d + "/x/y/z", Mode: 0o777, Parents: true}, none, true},
		{"file exists", &agentv1.FsMkdirRequest{Path: d + "/a.txt", Mode: 0o755, Parents: true}, exists, false},
		{"below a file", &agentv1.FsMkdirRequest{Path: d + "/a.txt/x", Mode: 0o755}, wrongType, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Mkdir(ctx, tc.req)
			wantKind(t, err, tc.want)
			if resp.GetCreated() != tc.wantCreated {
				t.Errorf("created %v, want %v", resp.GetCreated(), tc.wantCreated)
			}
		})
	}
	// The exact mode, the umask notwithstanding.
	for p, want := range map[string]os.FileMode{d + "/new": 0o700, d + "/x/y/z": 0o777, d + "/x": 0o755} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}
}

func TestFsReadFile(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	big := filepath.Join(d, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: d + "/link", MaxBytes: 100})
	wantKind(t, err, none)
	if !resp.GetHasContent() || string(resp.GetContent()) != "hello\nworld\n" || resp.GetEntry().GetSize() != 12 {
		t.Errorf("read through a symlink: %v", resp)
	}
	resp, err = c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: big, MaxBytes: 100})
	wantKind(t, err, none)
	if resp.GetHasContent() || resp.GetEntry().GetSize() != 100 || resp.GetEntry().GetMode() != 0o600 {
		t.Errorf("read of a file at the limit: %v", resp)
	}
	resp, err = c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: "/proc/self/status", MaxBytes: 1 << 20})
	wantKind(t, err, none)
	if !strings.Contains(string(resp.GetContent()), "Pid:") || resp.GetEntry().GetSize() != int64(len(resp.GetContent())) {
		t.Errorf("read of a /proc file: size %d, content %q", resp.GetEntry().GetSize(), resp.GetContent())
	}
	for _, tc := range []struct {
		path string
		want agentv1.FsErrorKind
	}{{d + "/nope", notFound}, {d + "/sub", wrongType}, {"/dev/null", unsupported}} {
		_, err := c.ReadFile(ctx, &agentv1.FsReadFileRequest{Path: tc.path, MaxBytes: 100})
		wantKind(t, err, tc.want)
	}
}

func TestFsRmMv(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  func() error
		want agentv1.FsErrorKind
	}{
		{"rm missing", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: d + "/nope"})) }, notFound},
		{"rm non-empty", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: d + "/sub"})) }, notEmpty},
		{"rm root", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: "/", Recursive: true})) }, invalid},
		{"rm empty dir", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: d + "/empty"})) }, none},
		{"rm symlink", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: d + "/link"})) }, none},
		{"mv missing", func() error { return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/nope", Dst: d + "/x"})) }, notFound},
		{"mv onto existing", func() error { return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/a.txt", Dst: d + "/bin.dat"})) }, exists},
		{"mv to missing dir", func() error { return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/a.txt", Dst: d + "/no/x"})) }, notFound},
		{"mv into itself", func() error { return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/sub", Dst: d + "/sub/x"})) }, invalid},
		{"mv overwrite", func() error {
			return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/bin.dat", Dst: d + "/a.txt", Overwrite: true}))
		}, none},
		{"mv", func() error { return second(c.Mv(ctx, &agentv1.FsMvRequest{Src: d + "/a.txt", Dst: d + "/sub/c.txt"})) }, none},
		{"rm recursive", func() error { return second(c.Rm(ctx, &agentv1.FsRmRequest{Path: d + "/sub", Recursive: true})) }, none},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKind(t, tc.err(), tc.want) })
	}
	entries, _ := os.ReadDir(d)
	if len(entries) != 0 {
		t.Errorf("left in %s: %v", d, entries)
	}
}

func TestFsChmod(t *testing.T) {
	testutil.RequiresRoot(t)
	c, d := fsTree(t)
	ctx := context.Background()
	mode := func(m uint32) *uint32 { return &m }
	resp, err := c.Chmod(ctx, &agentv1.FsChmodRequest{Path: d + "/link", Mode: mode(0o600)})
	wantKind(t, err, none)
	if resp.GetUpdated() != 1 || readMode(t, d+"/a.txt") != 0o600 {
		t.Errorf("chmod through a symlink: %v, mode %o", resp, readMode(t, d+"/a.txt"))
	}
	resp, err = c.Chmod(ctx, &agentv1.FsChmodRequest{Path: d + "/sub", Mode: mode(0o750), Uid: mode(1234), Gid: mode(4321), Recursive: true})
	wantKind(t, err, none)
	if resp.GetUpdated() != 2 {
		t.Errorf("recursive chmod updated %d paths, want 2", resp.GetUpdated())
	}
	var st syscall.Stat_t
	if err := syscall.Stat(d+"/sub/b.go", &st); err != nil || st.Uid != 1234 || st.Gid != 4321 || st.Mode&0o7777 != 0o750 {
		t.Errorf("sub/b.go after chmod: uid %d gid %d mode %o (%v)", st.Uid, st.Gid, st.Mode&0o7777, err)
	}
	_, err = c.Chmod(ctx, &agentv1.FsChmodRequest{Path: d + "/nope", Mode: mode(0o600)})
	wantKind(t, err, notFound)
	_, err = c.Chmod(ctx, &agentv1.FsChmodRequest{Path: d + "/a.txt"})
	wantKind(t, err, invalid)
}

func readMode(t *testing.T, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

func TestFsGrep(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	if err := os.WriteFile(d+"/sub/long.txt", []byte("hello "+strings.Repeat("y", 100)+"\r\nHELLO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type m struct {
		path string
		line int64
	}
	for _, tc := range []struct {
		name      string
		req       *agentv1.FsGrepRequest
		want      []m
		truncated bool
		kind      agentv1.FsErrorKind
	}{
		{"recursive", &agentv1.FsGrepRequest{Pattern: "hel+o", Filter: &agentv1.FsFilter{Recursive: true}},
			[]m{{"a.txt", 1}, {"sub/b.go", 2}, {"sub/long.txt", 1}}, false, none},
		{"ignore case", &agentv1.FsGrepRequest{Pattern: "^hello$", IgnoreCase: true, Filter: &agentv1.FsFilter{Recursive: true}},
			[]m{{"a.txt", 1}, {"sub/long.txt", 2}}, false, none},
		{"not recursive", &agentv1.FsGrepRequest{Pattern: "hello", Filter: &agentv1.FsFilter{}}, []m{{"a.txt", 1}}, false, none},
		{"include basename", &agentv1.FsGrepRequest{Pattern: "hello", Filter: &agentv1.FsFilter{Recursive: true, IncludeGlob: []string{"*.go"}}},
			[]m{{"sub/b.go", 2}}, false, none},
		{"include relative", &agentv1.FsGrepRequest{Pattern: "hello", Filter: &agentv1.FsFilter{Recursive: true, IncludeGlob: []string{"sub/**/*.txt"}}},
			[]m{{"sub/long.txt", 1}}, false, none},
		{"exclude dir", &agentv1.FsGrepRequest{Pattern: "hello", Filter: &agentv1.FsFilter{Recursive: true, ExcludeGlob: []string{"sub"}}},
			[]m{{"a.txt", 1}}, false, none},
		{"max matches", &agentv1.FsGrepRequest{Pattern: "hello", MaxMatches: 2, Filter: &agentv1.FsFilter{Recursive: true}},
			[]m{{"a.txt", 1}, {"sub/b.go", 2}}, true, none},
		{"bad regex", &agentv1.FsGrepRequest{Pattern: "a(", Filter: &agentv1.FsFilter{}}, nil, false, badRegex},
		{"empty pattern", &agentv1.FsGrepRequest{Filter: &agentv1.FsFilter{}}, nil, false, invalid},
		{"bad glob", &agentv1.FsGrepRequest{Pattern: "x", Filter: &agentv1.FsFilter{IncludeGlob: []string{"[a-"}}}, nil, false, invalid},
		{"missing", &agentv1.FsGrepRequest{Path: "/nope/x", Pattern: "x", Filter: &agentv1.FsFilter{}}, nil, false, notFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.Path == "" {
				tc.req.Path = d
			}
			if tc.req.MaxMatches == 0 {
				tc.req.MaxMatches = 100
			}
			tc.req.MaxLineBytes = 10
			resp, err := c.Grep(ctx, tc.req)
			wantKind(t, err, tc.kind)
			var got []m
			for _, x := range resp.GetMatches() {
				got = append(got, m{strings.TrimPrefix(x.GetPath(), d+"/"), x.GetLine()})
				if len(x.GetContent()) > 10 || bytes.HasSuffix(x.GetContent(), []byte("\r")) {
					t.Errorf("content %q is over max_line_bytes or keeps its CR", x.GetContent())
				}
			}
			sort.Slice(got, func(i, j int) bool { return got[i].path < got[j].path })
			if len(got) != len(tc.want) || resp.GetTruncated() != tc.truncated {
				t.Fatalf("matches %v truncated %v, want %v truncated %v", got, resp.GetTruncated(), tc.want, tc.truncated)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("matches %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestFsSed(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	if err := os.WriteFile(d+"/ro.txt", []byte("x=1\nhello\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d+"/crlf.txt", []byte("a=1\r\nb=2\r\nab=3"), 0o640); err != nil {
		t.Fatal(err)
	}
	// Regex with ${name} and $1, first only, across listed files; the
	// read-only and the missing file fail, the others change.
	resp, err := c.Sed(ctx, &agentv1.FsSedRequest{
		Files:   []string{d + "/crlf.txt", d + "/ro.txt", d + "/nope", d + "/link", "rel"},
		Pattern: `(?P<k>[a-z]+)=(\d)`, Replacement: "${k}:$2;", Regex: true, FirstOnly: true,
	})
	wantKind(t, err, none)
	type r struct {
		n    int64
		kind agentv1.FsErrorKind
	}
	want := []r{{3, none}, {0, permission}, {0, notFound}, {0, none}, {0, invalid}}
	for i, res := range resp.GetResults() {
		if got := (r{res.GetReplacements(), res.GetError().GetKind()}); got != want[i] {
			t.Errorf("result %d (%s): %v, want %v", i, res.GetPath(), got, want[i])
		}
	}
	if got := readFile(t, d+"/crlf.txt"); got != "a:1;\r\nb:2;\r\nab:3;" {
		t.Errorf("crlf.txt is %q", got)
	}
	if readMode(t, d+"/crlf.txt") != 0o640 || readFile(t, d+"/ro.txt") != "x=1\nhello\n" {
		t.Error("sed changed the mode of a file, or the read-only file")
	}
	// Literal, over a directory: the symlink's target changes once, the
	// link stays a link, binary files are skipped.
	resp, err = c.Sed(ctx, &agentv1.FsSedRequest{Path: d, Pattern: "hello", Replacement: "$1.bye", Regex: false,
		Filter: &agentv1.FsFilter{Recursive: true, ExcludeGlob: []string{"ro.txt"}}})
	wantKind(t, err, none)
	var paths []string
	for _, res := range resp.GetResults() {
		paths = append(paths, strings.TrimPrefix(res.GetPath(), d+"/"))
	}
	if !slicesEqual(paths, []string{"a.txt", "sub/b.go"}) || readFile(t, d+"/a.txt") != "$1.bye\nworld\n" {
		t.Errorf("sed over a directory changed %v; a.txt is %q", paths, readFile(t, d+"/a.txt"))
	}
	if fi, err := os.Lstat(d + "/link"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
	if readFile(t, d+"/bin.dat") != "hello\x00binary" {
		t.Error("sed changed a binary file")
	}
	for _, tc := range []struct {
		name string
		req  *agentv1.FsSedRequest
		want agentv1.FsErrorKind
	}{
		{"bad regex", &agentv1.FsSedRequest{Path: d, Pattern: "(", Regex: true}, badRegex},
		{"files and path", &agentv1.FsSedRequest{Path: d, Files: []string{d + "/a.txt"}, Pattern: "x"}, invalid},
		{"neither", &agentv1.FsSedRequest{Pattern: "x"}, invalid},
		{"missing path", &agentv1.FsSedRequest{Path: d + "/nope", Pattern: "x"}, notFound},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKind(t, second(c.Sed(ctx, tc.req)), tc.want) })
	}
	if left, _ := filepath.Glob(d + "/.hutch-tmp-*"); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestFsUploadDownload(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 bytes: 5 chunks
	up := func(h *agentv1.FsUploadHeader, r io.Reader) (*agentv1.FsUploadResponse, error) {
		return c.Upload(ctx, h, r, nil)
	}
	mode := uint32(0o750)
	resp, err := up(&agentv1.FsUploadHeader{Path: d + "/new/dir/f", Parents: true, Mode: &mode}, bytes.NewReader(data))
	wantKind(t, err, none)
	if resp.GetBytesWritten() != int64(len(data)) || readFile(t, d+"/new/dir/f") != string(data) || readMode(t, d+"/new/dir/f") != 0o750 {
		t.Fatalf("upload: %v, mode %o", resp, readMode(t, d+"/new/dir/f"))
	}
	// Through a symlink: the target is written, the link stays.
	resp, err = up(&agentv1.FsUploadHeader{Path: d + "/link"}, strings.NewReader("via link"))
	wantKind(t, err, none)
	if resp.GetPath() != d+"/a.txt" || readFile(t, d+"/a.txt") != "via link" || readMode(t, d+"/a.txt") != 0o644 {
		t.Errorf("upload through a symlink: %v", resp)
	}
	// To a character device: written in place.
	_, err = up(&agentv1.FsUploadHeader{Path: "/dev/null"}, bytes.NewReader(data))
	wantKind(t, err, none)

	for _, tc := range []struct {
		name string
		h    *agentv1.FsUploadHeader
		r    io.Reader
		want agentv1.FsErrorKind
	}{
		{"missing parent", &agentv1.FsUploadHeader{Path: d + "/no/f"}, strings.NewReader("x"), notFound},
		{"directory", &agentv1.FsUploadHeader{Path: d + "/sub"}, strings.NewReader("x"), wrongType},
		{"relative", &agentv1.FsUploadHeader{Path: "f"}, strings.NewReader("x"), invalid},
	} {
		t.Run(tc.name, func(t *testing.T) { wantKind(t, second(up(tc.h, tc.r)), tc.want) })
	}
	// A source that fails midway (a body cut off reads as
	// io.ErrUnexpectedEOF): nothing at the target, no temp file.
	for _, cut := range []error{errors.New("cut"), io.ErrUnexpectedEOF} {
		_, err = up(&agentv1.FsUploadHeader{Path: d + "/partial"}, io.MultiReader(bytes.NewReader(data), iotest.ErrReader(cut)))
		var se *agentclient.SourceError
		if !errors.As(err, &se) {
			t.Fatalf("upload of a source failing with %v: %v", cut, err)
		}
		waitNoFile(t, d+"/partial", d+"/.hutch-tmp-*")
	}

	entry, r, err := c.Download(ctx, &agentv1.FsDownloadRequest{Path: d + "/new/dir/f"})
	wantKind(t, err, none)
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) || entry.GetSize() != int64(len(data)) {
		t.Fatalf("download: %d bytes, %v; entry %v", len(got), err, entry)
	}
	for _, tc := range []struct {
		path string
		want agentv1.FsErrorKind
	}{{d + "/nope", notFound}, {d, wrongType}, {"/dev/zero", unsupported}} {
		_, _, err := c.Download(ctx, &agentv1.FsDownloadRequest{Path: tc.path})
		wantKind(t, err, tc.want)
	}
}

// waitNoFile waits a little for path and glob to match nothing: an aborted
// upload is cleaned up by the agent after the caller has its answer.
func waitNoFile(t *testing.T, path, glob string) {
	t.Helper()
	for range 100 {
		left, _ := filepath.Glob(glob)
		if _, err := os.Stat(path); os.IsNotExist(err) && len(left) == 0 {
			return
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 10e6}, nil)
	}
	t.Errorf("%s or %s left behind after an aborted upload", path, glob)
}

// rawFs serves an agent and returns a plain gRPC client of its Fs service,
// for requests agentclient never makes.
func rawFs(t *testing.T) agentv1.FsClient {
	t.Helper()
	srv, err := agent.New(agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host, guest := agenttest.Pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Serve(ctx, guest)
	sess, err := yamux.Client(host, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	conn, err := grpc.NewClient("passthrough:///agent",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return sess.Open() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return agentv1.NewFsClient(conn)
}

// TestFsUploadWithoutEOF checks that a stream that ends cleanly but without
// its last message commits nothing. It speaks gRPC to the agent directly:
// agentclient always marks the last message.
func TestFsUploadWithoutEOF(t *testing.T) {
	ctx := context.Background()
	d := t.TempDir()
	stream, err := rawFs(t).Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*agentv1.FsUploadRequest{{Header: &agentv1.FsUploadHeader{Path: d + "/f"}}, {Data: []byte("part")}} {
		if err := stream.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	_, err = stream.CloseAndRecv()
	wantKind(t, err, aborted)
	waitNoFile(t, d+"/f", d+"/.hutch-tmp-*")
}
