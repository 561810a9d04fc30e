package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// serveMCP hands /mcp to the MCP handler, with the body the route read
// (bounded like any other) and the request's owner. Its answers may be
// long event streams: each write gets the write timeout anew.
func (s *server) serveMCP(r *http.Request, body []byte) (any, error) {
	if s.mcp == nil {
		return nil, transportError(http.StatusNotFound, "route_not_found", "this daemon serves no MCP")
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(body)))
	r.ContentLength = int64(len(body))
	return mcpStream{h: s.mcp, r: r, timeout: s.writeTimeout}, nil
}

// mcpStream is the MCP handler's answer.
type mcpStream struct {
	h       http.Handler
	r       *http.Request
	timeout time.Duration
}

func (m mcpStream) stream(w http.ResponseWriter, _ io.Writer) int {
	rw := &refreshingWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: m.timeout}
	// An event stream may be quiet for long: only writes are bounded.
	_ = rw.rc.SetWriteDeadline(time.Time{})
	sw := &statusWriter{ResponseWriter: rw}
	m.h.ServeHTTP(sw, m.r)
	if sw.status == 0 {
		return http.StatusOK
	}
	return sw.status
}

// refreshingWriter gives each write the write timeout anew, and flushes.
type refreshingWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *refreshingWriter) Write(b []byte) (int, error) {
	w.refresh()
	return w.ResponseWriter.Write(b)
}

func (w *refreshingWriter) Flush() {
	w.refresh()
	_ = w.rc.Flush()
}

func (w *refreshingWriter) refresh() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *refreshingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
