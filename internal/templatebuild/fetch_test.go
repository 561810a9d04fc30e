package templatebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestFetch: a fetched file keeps its bytes (never decompressed), its
// digest and Last-Modified; a checksum it does not have, a status other
// than 200 and a file over the bound are S001; every connection goes
// through Dial; PackRemote names it as buildkit does, mode 0600.
func TestFetch(t *testing.T) {
	body := strings.Repeat("hello\n", 100)
	lastMod := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/files/data.txt":
			w.Header().Set("Last-Modified", lastMod.Format(http.TimeFormat))
			w.Header().Set("Content-Encoding", "identity")
			_, _ = w.Write([]byte(body))
		case "/redirect":
			http.Redirect(w, r, "/files/data.txt", http.StatusFound)
		case "/":
			_, _ = w.Write([]byte("root"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var dialled []string
	f := Fetcher{Dir: t.TempDir(), MaxBytes: 1 << 10, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	ctx := context.Background()
	sum := sha256.Sum256([]byte(body))
	r, err := f.Fetch(ctx, srv.URL+"/redirect", "sha256:"+hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Name != "redirect" || r.Size != int64(len(body)) || r.Digest != "sha256:"+hex.EncodeToString(sum[:]) || !r.ModTime.Equal(lastMod) || len(dialled) == 0 {
		t.Errorf("fetched %+v, dialled %v", r, dialled)
	}
	var buf bytes.Buffer
	var paths []string
	if err := PackRemote(&buf, r, "/opt/", CopyOptions{}, &paths); err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(&buf).Next()
	if err != nil || h.Name != "opt/redirect" || h.Mode != 0o600 || !h.ModTime.Equal(lastMod) || len(paths) != 1 {
		t.Errorf("packed %+v %v, paths %v", h, err, paths)
	}
	buf.Reset()
	if err := PackRemote(&buf, r, "/opt/renamed", CopyOptions{Chmod: "755"}, &paths); err != nil {
		t.Fatal(err)
	}
	if h, err := tar.NewReader(&buf).Next(); err != nil || h.Name != "opt/renamed" || h.Mode != 0o755 {
		t.Errorf("packed to a file name: %+v %v", h, err)
	}
	root, err := f.Fetch(ctx, srv.URL+"/", "")
	if err != nil || root.Name != "__unnamed__" || !root.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("a URL without a file name: %+v %v", root, err)
	}
	for _, tc := range []struct{ url, checksum, want string }{
		{srv.URL + "/files/data.txt", "sha256:" + strings.Repeat("0", 64), "not the sha256:0000"},
		{srv.URL + "/missing", "", "404"},
		{"ftp://example.com/x", "", "not an http or https URL"},
	} {
		if _, err := f.Fetch(ctx, tc.url, tc.checksum); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fetch(%s, %q) = %v, want S001 with %q", tc.url, tc.checksum, err, tc.want)
		}
	}
	f.MaxBytes = 100
	if _, err := f.Fetch(ctx, srv.URL+"/files/data.txt", ""); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), "MiB an ADD fetches") {
		t.Errorf("a file over the bound: %v", err)
	}
	if e, _ := filepath.Glob(filepath.Join(f.Dir, "*")); len(e) != 2 { // r's and root's: the failed fetches left none
		t.Errorf("temporary files left: %v", e)
	}
}
