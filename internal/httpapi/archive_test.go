package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// archiveFake takes archives (counting their bytes) and packs a
// directory as a few fixed bytes.
type archiveFake struct {
	*streamFake
	unpacked chan api.FsUnpackRequest
}

func (f *archiveFake) Unpack(_ context.Context, req api.FsUnpackRequest, body io.Reader) (api.FsUnpackResponse, error) {
	n, err := io.Copy(io.Discard, body)
	f.unpacked <- req
	return api.FsUnpackResponse{Entries: 1, Bytes: n, Compression: "none"}, err
}

func (f *archiveFake) Pack(_ context.Context, req api.FsPackRequest) (api.FsEntry, io.ReadCloser, error) {
	return api.FsEntry{Name: "dir", IsDir: true, Mode: "0755", Mtime: 1}, io.NopCloser(strings.NewReader("\x1f\x8bfake archive of " + req.Path)), nil
}

// TestArchiveRoutes: PUT streams a body past the JSON limit into
// sandbox::fs::unpack; GET answers the archive's raw bytes.
func TestArchiveRoutes(t *testing.T) {
	f := &archiveFake{streamFake: newStreamFake(), unpacked: make(chan api.FsUnpackRequest, 1)}
	h := httpapi.New(functions.New(functionstest.DepsOf(f)), httpapi.Options{})
	size := int64(httpapi.DefaultMaxBodyBytes) + 1<<20
	req := newRequest("PUT", "/v1/sandboxes/"+functionstest.DefaultID+"/archive?path=/w", io.LimitReader(zeros{}, size))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp api.FsUnpackResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); rec.Code != http.StatusOK || err != nil || resp.Bytes != size {
		t.Fatalf("PUT archive: %d %s", rec.Code, rec.Body)
	}
	if got := <-f.unpacked; got.SandboxID != functionstest.DefaultID || got.Path != "/w" {
		t.Errorf("unpack request %+v", got)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/v1/sandboxes/"+functionstest.DefaultID+"/archive?path=/w", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "\x1f\x8bfake archive of /w" ||
		rec.Header().Get("Content-Type") != "application/gzip" || rec.Header().Get("Content-Length") != "" || rec.Header().Get("X-Hutch-Mode") != "0755" {
		t.Errorf("GET archive: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
}
