package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// TestDownloadBound checks that a download stops at the client's bound,
// whether the daemon announces the size or streams it without one, and
// that a download at the bound goes through whole.
func TestDownloadBound(t *testing.T) {
	const limit = 64 << 10
	// The daemon's answer: n bytes, with a Content-Length unless chunked.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The file's path says what to send: "/N" or "/N/chunked".
		size, chunked, _ := strings.Cut(strings.TrimPrefix(r.URL.Query().Get("path"), "/"), "/")
		n, _ := strconv.Atoi(size)
		if chunked == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		for sent := 0; sent < n; sent += 1024 {
			w.Write(bytes.Repeat([]byte{'x'}, min(1024, n-sent)))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c := client.New(srv.URL, "").WithMaxDownload(limit)
	read := func(n int, chunked bool) (int64, error) {
		p := "/" + strconv.Itoa(n)
		if chunked {
			p += "/chunked"
		}
		body, err := c.DownloadArchive(ctx, api.FsPackRequest{SandboxID: id, Path: p})
		if err != nil {
			return 0, err
		}
		defer body.Close()
		return io.Copy(io.Discard, body)
	}
	for _, chunked := range []bool{false, true} {
		if got, err := read(limit, chunked); err != nil || got != limit {
			t.Errorf("chunked %v: a download at the bound: %d bytes, %v", chunked, got, err)
		}
		got, err := read(limit+1, chunked)
		if !client.IsDownloadTooLarge(err) || got > limit {
			t.Errorf("chunked %v: a download past the bound: %d bytes, %v; want at most %d and a DownloadTooLargeError", chunked, got, err, limit)
		}
	}
	if client.DefaultMaxDownload != 1<<30 {
		t.Errorf("DefaultMaxDownload %d", client.DefaultMaxDownload)
	}
}
