package envd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
)

// post uploads body to /files with ctype (and gzip when zip).
func (e *env) post(t *testing.T, query url.Values, ctype string, body []byte, zip bool) (int, []byte) {
	t.Helper()
	if zip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	req, _ := http.NewRequestWithContext(testCtx(t), "POST", e.srv.URL+"/files?"+query.Encode(), bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if zip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	return e.do(t, req)
}

func (e *env) get(t *testing.T, p string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", e.srv.URL+"/files?"+url.Values{"path": {p}}.Encode(), nil)
	return e.do(t, req)
}

func (e *env) do(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// form is a multipart body of files whose file names are full paths.
func form(t *testing.T, files map[string]string) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for name, content := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func TestFilesUploadAndDownload(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "x", "a.txt"), filepath.Join(dir, "y", "z", "b.bin")

	ctype, body := form(t, map[string]string{a: "alpha", b: "\x00\xffbeta"})
	status, out := e.post(t, nil, ctype, body, false)
	var written []writtenEntry
	if status != 200 || json.Unmarshal(out, &written) != nil || len(written) != 2 {
		t.Fatalf("multipart upload: %d %s", status, out)
	}
	for _, w := range written {
		if w.Type != "file" || filepath.Base(w.Path) != w.Name || (w.Path != a && w.Path != b) {
			t.Errorf("written entry %+v", w)
		}
	}
	c := filepath.Join(dir, "c.txt")
	status, out = e.post(t, url.Values{"path": {c}}, "application/octet-stream", []byte("gamma"), true)
	if status != 200 {
		t.Fatalf("octet-stream upload: %d %s", status, out)
	}
	ctype, body = form(t, map[string]string{"ignored-name": "delta"})
	if status, out = e.post(t, url.Values{"path": {filepath.Join(dir, "d.txt")}}, ctype, body, false); status != 200 {
		t.Fatalf("multipart upload to ?path: %d %s", status, out)
	}

	for p, want := range map[string]string{a: "alpha", b: "\x00\xffbeta", c: "gamma", filepath.Join(dir, "d.txt"): "delta"} {
		if status, got := e.get(t, p); status != 200 || string(got) != want {
			t.Errorf("GET %s: %d %q, want %q", p, status, got, want)
		}
	}
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", e.srv.URL+"/files?"+url.Values{"path": {a}}.Encode(), nil)
	req.Header.Set("Accept-Encoding", "gzip")
	if status, got := e.do(t, req); status != 200 || gunzip(t, got) != "alpha" {
		t.Errorf("gzipped GET: %d %q", status, got)
	}
	status, out = e.get(t, filepath.Join(dir, "missing"))
	var msg struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if status != 404 || json.Unmarshal(out, &msg) != nil || msg.Code != 404 || msg.Message == "" {
		t.Errorf("GET of a missing file: %d %s", status, out)
	}

	req, _ = http.NewRequestWithContext(testCtx(t), "GET", e.srv.URL+"/health", nil)
	if status, _ := e.do(t, req); status != http.StatusNoContent {
		t.Errorf("health: %d", status)
	}
}

func TestFilesystemService(t *testing.T) {
	e := newEnv(t)
	for name, opts := range codecs {
		t.Run(name, func(t *testing.T) {
			fc := e.fs(opts)
			ctx := testCtx(t)
			dir := t.TempDir()
			sub := filepath.Join(dir, "a", "b")
			made, err := fc.MakeDir(ctx, connect.NewRequest(&pb.MakeDirRequest{Path: sub}))
			if err != nil || made.Msg.GetEntry().GetType() != pb.FileType_FILE_TYPE_DIRECTORY || made.Msg.GetEntry().GetPath() != sub {
				t.Fatalf("makeDir: %v %v", made, err)
			}
			_, err = fc.MakeDir(ctx, connect.NewRequest(&pb.MakeDirRequest{Path: sub}))
			wantCode(t, err, connect.CodeAlreadyExists)
			if err := os.WriteFile(filepath.Join(sub, "f.txt"), []byte("12345"), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("f.txt", filepath.Join(sub, "link")); err != nil {
				t.Fatal(err)
			}

			st, err := fc.Stat(ctx, connect.NewRequest(&pb.StatRequest{Path: filepath.Join(sub, "f.txt")}))
			if err != nil {
				t.Fatal(err)
			}
			if en := st.Msg.GetEntry(); en.GetType() != pb.FileType_FILE_TYPE_FILE || en.GetSize() != 5 || en.GetMode() != 0o640 ||
				en.GetPermissions() != "-rw-r-----" || en.GetName() != "f.txt" || en.GetModifiedTime().GetSeconds() == 0 {
				t.Errorf("stat: %v", en)
			}
			_, err = fc.Stat(ctx, connect.NewRequest(&pb.StatRequest{Path: filepath.Join(dir, "nope")}))
			wantCode(t, err, connect.CodeNotFound)

			names := func(depth uint32) []string {
				ls, err := fc.ListDir(ctx, connect.NewRequest(&pb.ListDirRequest{Path: dir, Depth: depth}))
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, en := range ls.Msg.GetEntries() {
					rel, _ := filepath.Rel(dir, en.GetPath())
					out = append(out, rel+":"+en.GetType().String())
				}
				slices.Sort(out)
				return out
			}
			if got, want := names(0), []string{"a:FILE_TYPE_DIRECTORY"}; !slices.Equal(got, want) {
				t.Errorf("depth 1: %v, want %v", got, want)
			}
			want := []string{"a/b/f.txt:FILE_TYPE_FILE", "a/b/link:FILE_TYPE_SYMLINK", "a/b:FILE_TYPE_DIRECTORY", "a:FILE_TYPE_DIRECTORY"}
			if got := names(3); !slices.Equal(got, want) {
				t.Errorf("depth 3: %v, want %v", got, want)
			}
			// envd's order: depth first, by name, a directory before what it holds.
			if err := os.WriteFile(filepath.Join(dir, "z.txt"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ls, err := fc.ListDir(ctx, connect.NewRequest(&pb.ListDirRequest{Path: dir, Depth: 3}))
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, en := range ls.Msg.GetEntries() {
				rel, _ := filepath.Rel(dir, en.GetPath())
				order = append(order, rel)
			}
			if want := []string{"a", "a/b", "a/b/f.txt", "a/b/link", "z.txt"}; !slices.Equal(order, want) {
				t.Errorf("order: %v, want %v", order, want)
			}
			if err := os.Remove(filepath.Join(dir, "z.txt")); err != nil {
				t.Fatal(err)
			}

			dst := filepath.Join(dir, "moved.txt")
			mv, err := fc.Move(ctx, connect.NewRequest(&pb.MoveRequest{Source: filepath.Join(sub, "f.txt"), Destination: dst}))
			if err != nil || mv.Msg.GetEntry().GetPath() != dst {
				t.Fatalf("move: %v %v", mv, err)
			}
			if _, err := fc.Remove(ctx, connect.NewRequest(&pb.RemoveRequest{Path: filepath.Join(dir, "a")})); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
				t.Errorf("a directory removed is there: %v", err)
			}
			// Removing what is not there succeeds, as envd's does.
			if _, err := fc.Remove(ctx, connect.NewRequest(&pb.RemoveRequest{Path: filepath.Join(dir, "a")})); err != nil {
				t.Errorf("removing a missing path: %v", err)
			}
		})
	}
}

func TestGuessedHomes(t *testing.T) {
	for user, want := range map[string]string{"": "/root", "root": "/root", "user": "/home/user", "1000:1000": "/", "a/b": "/"} {
		if got := guessHome(user); got != want {
			t.Errorf("guessHome(%q) = %q, want %q", user, got, want)
		}
	}
}

func TestBasicUser(t *testing.T) {
	for h, want := range map[string]string{
		"Basic dXNlcjo=": "user", // "user:"
		"basic cm9vdDo=": "root",
		"Bearer x":       "",
		"Basic !!!":      "",
		"":               "",
	} {
		if got := basicUser(h); got != want {
			t.Errorf("basicUser(%q) = %q, want %q", h, got, want)
		}
	}
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"gzip": true, "deflate, gzip;q=0.5": true, "GZIP": true, "gzip;q=1.0": true,
		"gzip;q=0": false, "gzip; q=0.0": false, "identity": false, "": false, "x-gzip": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}
