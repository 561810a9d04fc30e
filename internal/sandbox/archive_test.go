package sandbox

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

	"github.com/klauspost/compress/zstd"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
)

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
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	ctx := context.Background()
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
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	ctx := context.Background()
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
