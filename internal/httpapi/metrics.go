package httpapi

import (
	"io"
	"net/http"
)

// prometheus serves GET /metrics: the daemon's metrics (Options.Metrics)
// in the Prometheus text format. Like every route but /healthz it needs a
// token when the daemon has api_tokens; Prometheus sends one with
// `authorization: {credentials: ...}` in its scrape config.
func (s *server) prometheus(r *http.Request, _ []byte) (any, error) {
	if s.metrics == nil {
		return nil, transportError(http.StatusNotFound, "route_not_found", "this daemon serves no metrics")
	}
	return handlerStream{h: s.metrics, r: r}, nil
}

// handlerStream is a result written by a plain http.Handler.
type handlerStream struct {
	h http.Handler
	r *http.Request
}

// stream serves the handler on w, under the write timeout of a whole
// answer, and returns the status the handler wrote.
func (hs handlerStream) stream(w http.ResponseWriter, _ io.Writer) int {
	sw := &statusWriter{ResponseWriter: w}
	hs.h.ServeHTTP(sw, hs.r)
	if sw.status == 0 {
		return http.StatusOK // net/http's answer when a handler writes nothing
	}
	return sw.status
}

// statusWriter records the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	return sw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// Flush flushes what was written, for handlers that stream.
func (sw *statusWriter) Flush() { _ = http.NewResponseController(sw.ResponseWriter).Flush() }
