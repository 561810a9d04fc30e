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

// stream serves the handler on w, under the write timeout of a whole answer.
func (hs handlerStream) stream(w http.ResponseWriter, _ io.Writer) int {
	hs.h.ServeHTTP(w, hs.r)
	return http.StatusOK
}
