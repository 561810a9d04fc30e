package httpapi

// The filesystem routes: POST /v1/sandboxes/{id}/fs/{op} dispatches to
// sandbox::fs::{op}; PUT and GET /v1/sandboxes/{id}/files stream a file's
// bytes in and out without ever holding the whole file.

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// filesPath is the route of streamed transfers.
const filesPath = "/v1/sandboxes/{id}/files"

// streamChunk is how many bytes of a streamed upload must arrive within
// the read timeout.
const streamChunk = 64 << 10

// fsOp is sandbox::fs::{op} with {id} as sandbox_id; an unknown op is a
// route that does not exist.
func (s *server) fsOp(r *http.Request, body []byte) (any, error) {
	op := r.PathValue("op")
	ops := make([]string, len(api.FsFns))
	for i, fn := range api.FsFns {
		if ops[i] = api.FnOp(fn); ops[i] == op {
			return s.call(fn, sandboxParam)(r, body)
		}
	}
	return nil, transportError(http.StatusNotFound, "route_not_found",
		"no filesystem operation "+strconv.Quote(op)+" (known: "+strings.Join(ops, ", ")+")")
}

// streamed reports whether r's route reads its body itself, as a stream:
// serve leaves it alone.
func streamed(r *http.Request) bool {
	return r.Pattern == http.MethodPut+" "+filesPath || r.Pattern == http.MethodPut+" "+archivePath || isPreview(r)
}

// upload is PUT /v1/sandboxes/{id}/files?path=P[&mode=M][&parents=true][&user=U]:
// the request body becomes the file, streamed to the agent. The answer is
// the result of sandbox::fs::write.
func (s *server) upload(r *http.Request, _ []byte) (any, error) {
	q := r.URL.Query()
	parents, _, err := queryBool(r, "parents")
	if err != nil {
		return nil, err
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return functions.Invoke(r.Context(), s.table, api.FnFsWrite, api.FsWriteRequest{
		SandboxID: r.PathValue("id"),
		Path:      q.Get("path"),
		Mode:      api.FileMode(q.Get("mode")),
		Parents:   parents,
		User:      q.Get("user"),
		Body:      body,
	})
}

// download is GET /v1/sandboxes/{id}/files?path=P, the table's
// sandbox::fs::download rendered as the file's bytes: the body
// (application/octet-stream), with its size as Content-Length (unless it
// reports none, as files of /proc do), its mtime as Last-Modified and its
// mode in X-Hutch-Mode. Errors found before the first byte are error
// envelopes; a stream cut off later cuts the response off, so that the
// client sees a truncated body, never a short file that looks whole.
func (s *server) download(r *http.Request, _ []byte) (any, error) {
	res, err := functions.Invoke(r.Context(), s.table, api.FnFsDownload, api.FsDownloadRequest{
		SandboxID: r.PathValue("id"),
		Path:      r.URL.Query().Get("path"),
		User:      r.URL.Query().Get("user"),
	})
	if err != nil {
		return nil, err
	}
	return &fileStream{s: s, ctx: r.Context(), st: res.(*functions.Stream)}, nil
}

// streamer is a result that writes itself instead of being encoded: its
// headers to w, its body to body (w, under per-chunk write deadlines). It
// returns the status it answered.
type streamer interface {
	stream(w http.ResponseWriter, body io.Writer) int
}

var (
	_ streamer = (*fileStream)(nil)
	_ streamer = (*eventStream)(nil)
	_ streamer = handlerStream{}
)

// fileStream is a download's result (or an archive's: contentType says
// which; "" is application/octet-stream).
type fileStream struct {
	s           *server
	ctx         context.Context
	st          *functions.Stream
	contentType string
}

func (f *fileStream) stream(w http.ResponseWriter, body io.Writer) int {
	defer f.st.Close()
	ev, err := f.st.Expect(f.ctx, functions.EventEntry)
	f.s.answering(w)
	entry, ok := ev.Data.(api.FsEntry)
	if err == nil && !ok {
		err = errdefs.New(errdefs.CodeInternal, "a download's entry is a %T", ev.Data)
	}
	if err != nil {
		return f.s.writeError(w, err)
	}
	h := w.Header()
	h.Set("Content-Type", cmp.Or(f.contentType, "application/octet-stream"))
	if entry.Size > 0 {
		h.Set("Content-Length", strconv.FormatInt(entry.Size, 10))
	}
	h.Set("Last-Modified", time.Unix(entry.Mtime, 0).UTC().Format(http.TimeFormat))
	h.Set("X-Hutch-Mode", entry.Mode)
	w.WriteHeader(http.StatusOK)
	for {
		ev, err := f.st.Next(f.ctx)
		if err == io.EOF {
			return http.StatusOK
		}
		if err == nil && ev.Type == functions.EventData {
			_, err = body.Write(ev.Bytes)
		}
		if err != nil {
			f.s.log.Warn("download cut off", "file", entry.Name, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}
