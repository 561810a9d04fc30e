package filesvc

// The files service over the fake core (sandboxtest) whose sandbox has a
// real in-process agent on the host's filesystem: no root, no gVisor.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// withAgent is the service over a fake core holding one running sandbox
// of owner "ann" with a real agent: the service, the sandbox's id and a
// context of its owner.
func withAgent(t *testing.T) (*Service, string, context.Context) {
	t.Helper()
	var sbs sandboxtest.Sandboxes
	sb := sbs.Add("ann")
	sb.Agent = agenttest.Start(t, agent.Options{Version: "test"}, agentclient.Options{MaxOutputBytes: 1 << 20, CallTimeout: 10 * time.Second}).Client
	t.Cleanup(func() {
		if n := sbs.Held(); n != 0 {
			t.Errorf("%d handles not released", n)
		}
	})
	return New(&sbs), sb.ID, auth.WithOwner(context.Background(), "ann")
}

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestFsCallOnRunningSandbox(t *testing.T) {
	m, id, ctx := withAgent(t)
	dir := t.TempDir()
	if _, err := m.Mkdir(ctx, api.FsMkdirRequest{SandboxID: id, Path: dir + "/sub"}); err != nil {
		t.Fatal(err)
	}
	ls, err := m.Ls(ctx, api.FsLsRequest{SandboxID: id, Path: dir})
	if err != nil || len(ls.Entries) != 1 || ls.Entries[0].Name != "sub" {
		t.Fatalf("ls = %+v, %v", ls, err)
	}
	// The agent's FsError is its S-code, through the core's mapping.
	_, err = m.Stat(ctx, api.FsStatRequest{SandboxID: id, Path: dir + "/missing"})
	wantCode(t, err, errdefs.CodeFSNotFound)
	_, err = m.WriteFile(ctx, api.FsWriteRequest{SandboxID: id, Path: dir + "/no/such/file", Content: new(string)})
	if e := errdefs.As(err); e.Code != errdefs.CodeFSNotFound || e.FixNote == "" {
		t.Errorf("a write under a missing directory: %v, want S211 with the fix parents", err)
	}
	content := "hello"
	if _, err := m.WriteFile(ctx, api.FsWriteRequest{SandboxID: id, Path: dir + "/f", Content: &content}); err != nil {
		t.Fatal(err)
	}
	e, r, err := m.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: dir + "/f"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != content || e.Size != int64(len(content)) {
		t.Errorf("download: %q %+v, %v", b, e, err)
	}
	_, err = m.Ls(auth.WithOwner(context.Background(), "bob"), api.FsLsRequest{SandboxID: id, Path: dir})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = m.Ls(ctx, api.FsLsRequest{SandboxID: id, Path: dir, User: "nobody-here"})
	wantCode(t, err, errdefs.CodeMalformed)
}

func TestFsRequestChecks(t *testing.T) {
	m := New(&sandboxtest.Sandboxes{})
	ctx := context.Background()
	text, bad := "x", "!!"
	for _, tc := range []struct {
		name string
		call func() error
		code errdefs.Code
	}{
		{"relative path", func() error { _, err := m.Ls(ctx, api.FsLsRequest{Path: "tmp"}); return err }, errdefs.CodeFSInvalid},
		{"empty path", func() error { _, err := m.Stat(ctx, api.FsStatRequest{}); return err }, errdefs.CodeFSInvalid},
		{"NUL in path", func() error { _, err := m.Rm(ctx, api.FsRmRequest{Path: "/a\x00b"}); return err }, errdefs.CodeFSInvalid},
		{"bad mode", func() error { _, err := m.Mkdir(ctx, api.FsMkdirRequest{Path: "/a", Mode: "rwx"}); return err }, errdefs.CodeFSInvalid},
		{"mode too large", func() error { _, err := m.Mkdir(ctx, api.FsMkdirRequest{Path: "/a", Mode: "17777"}); return err }, errdefs.CodeFSInvalid},
		{"both bodies", func() error {
			_, err := m.WriteFile(ctx, api.FsWriteRequest{Path: "/a", Content: &text, ContentB64: &text})
			return err
		}, errdefs.CodeMalformed},
		{"no body", func() error { _, err := m.WriteFile(ctx, api.FsWriteRequest{Path: "/a"}); return err }, errdefs.CodeMalformed},
		{"bad base64", func() error { _, err := m.WriteFile(ctx, api.FsWriteRequest{Path: "/a", ContentB64: &bad}); return err }, errdefs.CodeMalformed},
		{"chmod nothing", func() error { _, err := m.Chmod(ctx, api.FsChmodRequest{Path: "/a"}); return err }, errdefs.CodeFSInvalid},
		{"empty grep pattern", func() error { _, err := m.Grep(ctx, api.FsGrepRequest{Path: "/a"}); return err }, errdefs.CodeFSInvalid},
		{"negative max_matches", func() error {
			_, err := m.Grep(ctx, api.FsGrepRequest{Path: "/a", Pattern: "x", MaxMatches: -1})
			return err
		}, errdefs.CodeFSInvalid},
		{"sed files and path", func() error {
			_, err := m.Sed(ctx, api.FsSedRequest{Path: "/a", Files: []string{"/b"}, Pattern: "x"})
			return err
		}, errdefs.CodeFSInvalid},
		{"sed neither", func() error { _, err := m.Sed(ctx, api.FsSedRequest{Pattern: "x"}); return err }, errdefs.CodeFSInvalid},
		{"sed relative file", func() error {
			_, err := m.Sed(ctx, api.FsSedRequest{Files: []string{"/a", "b"}, Pattern: "x"})
			return err
		}, errdefs.CodeFSInvalid},
		{"sed empty pattern", func() error { _, err := m.Sed(ctx, api.FsSedRequest{Path: "/a"}); return err }, errdefs.CodeFSInvalid},
		// Valid requests reach the lookup, which knows no sandbox.
		{"valid request", func() error {
			_, err := m.Ls(ctx, api.FsLsRequest{SandboxID: "00000000-0000-4000-8000-000000000000", Path: "/"})
			return err
		}, errdefs.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); errdefs.CodeOf(err) != tc.code {
				t.Fatalf("got %v (%s), want %s", err, errdefs.CodeOf(err), tc.code)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   api.FileMode
		want uint32
		ok   bool
	}{
		{"", 0o755, true}, {"0644", 0o644, true}, {"644", 0o644, true}, {"0o600", 0o600, true},
		{"1777", 0o1777, true}, {"7777", 0o7777, true}, {"0999", 0, false}, {"10000", 0, false}, {"0o", 0, false}, {"-1", 0, false},
	} {
		got, err := parseMode("/p", tc.in, 0o755)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseMode(%q) = %o, %v; want %o ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// testArchive is a tar of a few files, and what each holds.
func testArchive(t *testing.T) ([]byte, map[string]string) {
	t.Helper()
	files := map[string]string{"a.txt": "alpha", "d/b.bin": strings.Repeat("\x00\x01", 70000), "d/e/c": "gamma"}
	var entries []ocitest.File
	for _, name := range []string{"a.txt", "d/b.bin", "d/e/c"} {
		entries = append(entries, ocitest.Reg(name, files[name], 0o640))
	}
	return ocitest.Tar(t, entries...), files
}

// TestUnpackAndPack runs both archive calls through the manager and a
// real agent: each compression comes in, a tar.gz goes out.
func TestUnpackAndPack(t *testing.T) {
	m, id, ctx := withAgent(t)
	plain, files := testArchive(t)
	var gz, zst bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	enc, err := zstd.NewWriter(&zst)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(plain)
	enc.Close()
	for _, tc := range []struct {
		format string
		body   []byte
	}{{"none", plain}, {"gzip", gz.Bytes()}, {"zstd", zst.Bytes()}} {
		dir := filepath.Join(t.TempDir(), "into", tc.format)
		resp, err := m.Unpack(ctx, api.FsUnpackRequest{SandboxID: id, Path: dir}, bytes.NewReader(tc.body))
		if err != nil {
			t.Fatalf("unpack of %s: %v", tc.format, err)
		}
		if resp != (api.FsUnpackResponse{Entries: 3, Bytes: 140010, Compression: tc.format}) {
			t.Errorf("unpack of %s answered %+v", tc.format, resp)
		}
		for name, want := range files {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
				t.Errorf("%s: %s: %d bytes, %v", tc.format, name, len(b), err)
			}
		}
	}

	src := filepath.Join(t.TempDir(), "src")
	if _, err := m.Unpack(ctx, api.FsUnpackRequest{SandboxID: id, Path: src}, bytes.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
	entry, r, err := m.Pack(ctx, api.FsPackRequest{SandboxID: id, Path: src})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !entry.IsDir || entry.Size != 0 || entry.Name != "src" {
		t.Errorf("pack entry %+v", entry)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if hdr.Typeflag == tar.TypeReg {
			got[hdr.Name] = string(b)
		}
	}
	if len(got) != len(files) || got["d/e/c"] != "gamma" || got["d/b.bin"] != files["d/b.bin"] {
		t.Errorf("the tar.gz holds %d files", len(got))
	}
}

// TestUnpackFailures: bad archives are S210, a body cut off S218, bad
// requests fail before the sandbox is asked.
func TestUnpackFailures(t *testing.T) {
	m, id, ctx := withAgent(t)
	plain, _ := testArchive(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		req  api.FsUnpackRequest
		body io.Reader
		code errdefs.Code
	}{
		{"relative", api.FsUnpackRequest{SandboxID: id, Path: "rel"}, bytes.NewReader(plain), errdefs.CodeFSInvalid},
		{"unknown sandbox", api.FsUnpackRequest{SandboxID: "00000000-0000-4000-8000-000000000000", Path: dir}, bytes.NewReader(plain), errdefs.CodeNotFound},
		{"truncated gzip", api.FsUnpackRequest{SandboxID: id, Path: dir + "/t"}, bytes.NewReader(gz.Bytes()[:gz.Len()/2]), errdefs.CodeFSInvalid},
		{"xz", api.FsUnpackRequest{SandboxID: id, Path: dir + "/x"}, bytes.NewReader([]byte{0xfd, '7', 'z', 'X', 'Z', 0, 0}), errdefs.CodeFSInvalid},
		{"dot-dot", api.FsUnpackRequest{SandboxID: id, Path: dir + "/dd"}, bytes.NewReader(ocitest.Tar(t, ocitest.Reg("../escape", "", 0o644))), errdefs.CodeFSInvalid},
		{"body cut off", api.FsUnpackRequest{SandboxID: id, Path: dir + "/cut"},
			io.MultiReader(bytes.NewReader(gz.Bytes()[:gz.Len()/2]), iotest.ErrReader(errors.New("connection reset"))), errdefs.CodeFSStreamAborted},
		{"into a file", api.FsUnpackRequest{SandboxID: id, Path: dir + "/file"}, bytes.NewReader(plain), errdefs.CodeFSWrongType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "into a file" {
				if err := os.WriteFile(dir+"/file", nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := m.Unpack(ctx, tc.req, tc.body)
			wantCode(t, err, tc.code)
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); !os.IsNotExist(err) {
		t.Errorf("an entry escaped: %v", err)
	}
	_, _, err := m.Pack(ctx, api.FsPackRequest{SandboxID: id, Path: dir + "/file"})
	wantCode(t, err, errdefs.CodeFSWrongType)
}
