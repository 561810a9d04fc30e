package httpapi

// The filesystem routes: POST /v1/sandboxes/{id}/fs/{op} dispatches to
// sandbox::fs::{op}; PUT and GET /v1/sandboxes/{id}/files stream a file's
// bytes in and out without ever holding the whole file.

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// filesPath is the route of streamed transfers.
const filesPath = "/v1/sandboxes/{id}/files"

// streamChunk is the buffer size of a download's copy.
const streamChunk = 64 << 10

// fsOp is sandbox::fs::{op} with {id} as sandbox_id; an unknown op is a
// route that does not exist.
func (s *server) fsOp(r *http.Request, body []byte) (any, error) {
	op := r.PathValue("op")
	if !slices.Contains(functions.FSOps, op) {
		return nil, transportError(http.StatusNotFound, "route_not_found",
			"no filesystem operation "+strconv.Quote(op)+" (known: "+strings.Join(functions.FSOps, ", ")+")")
	}
	return s.call("sandbox::fs::"+op, pathParam("id", "sandbox_id"))(r, body)
}

// streamed reports whether r's route reads its body itself, as a stream:
// serve leaves it alone.
func streamed(r *http.Request) bool { return r.Pattern == http.MethodPut+" "+filesPath }

// upload is PUT /v1/sandboxes/{id}/files?path=P[&mode=M][&parents=true]:
// the request body becomes the file, streamed to the agent. The answer is
// the result of sandbox::fs::write.
func (s *server) upload(r *http.Request, _ []byte) (any, error) {
	q := r.URL.Query()
	_, v, _, err := queryBool("parents", "parents")(r)
	if err != nil {
		return nil, err
	}
	parents, _ := v.(bool)
	req := api.FsUploadRequest{
		SandboxID: r.PathValue("id"),
		Path:      q.Get("path"),
		Mode:      api.FileMode(q.Get("mode")),
		Parents:   parents,
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return s.table.Upload(r.Context(), req, body)
}

// download is GET /v1/sandboxes/{id}/files?path=P: the file's bytes as the
// body (application/octet-stream), with its size as Content-Length (unless
// it reports none, as files of /proc do), its mtime as Last-Modified and
// its mode in X-Hutch-Mode. Errors found before the first byte are error
// envelopes; a stream cut off later cuts the response off, so that the
// client sees a truncated body, never a short file that looks whole.
func (s *server) download(r *http.Request, _ []byte) (any, error) {
	entry, rc, err := s.table.Download(r.Context(), api.FsDownloadRequest{
		SandboxID: r.PathValue("id"),
		Path:      r.URL.Query().Get("path"),
	})
	if err != nil {
		return nil, err
	}
	return &fileStream{entry: entry, r: rc, log: s.log}, nil
}

// streamer is a result that writes itself instead of being encoded: its
// headers to w, its body to body (w, under per-chunk write deadlines).
type streamer interface {
	stream(w http.ResponseWriter, body io.Writer) int
}

var (
	_ streamer = (*fileStream)(nil)
	_ streamer = handlerStream{}
)

// fileStream is a download's result.
type fileStream struct {
	entry api.FsEntry
	r     io.ReadCloser
	log   *slog.Logger
}

func (f *fileStream) stream(w http.ResponseWriter, body io.Writer) int {
	defer f.r.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	if f.entry.Size > 0 {
		h.Set("Content-Length", strconv.FormatInt(f.entry.Size, 10))
	}
	h.Set("Last-Modified", time.Unix(f.entry.Mtime, 0).UTC().Format(http.TimeFormat))
	h.Set("X-Hutch-Mode", f.entry.Mode)
	w.WriteHeader(http.StatusOK)
	if _, err := io.CopyBuffer(body, f.r, make([]byte, streamChunk)); err != nil {
		f.log.Warn("download cut off", "file", f.entry.Name, "err", err)
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}
