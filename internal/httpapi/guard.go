package httpapi

import (
	"errors"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// guarded runs every request through the web guard before mux: a refused
// one is answered 403 with the refusal's code and never reaches a route;
// a CORS preflight from an allowed origin is answered here. Only the
// public preview route, as mux matches the request, skips the Origin
// rules.
func (s *server) guarded(guard *webguard.Policy, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); publicPreview(pattern) {
			// Any page may call a public port (its token is its
			// authority; the port answers CORS itself); only the Host
			// rule holds.
			if err := guard.CheckHost(r); err != nil {
				s.writeError(w, refused(err))
				return
			}
			mux.ServeHTTP(w, r)
			return
		}
		if err := guard.Check(r); err != nil {
			s.writeError(w, refused(err))
			return
		}
		if guard.CORS(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// refused is the envelope of a webguard refusal: class config (the
// daemon's allowed_hosts and allowed_origins decide it), 403.
func refused(err error) *routeError {
	code := "forbidden"
	var ref *webguard.Refusal
	if errors.As(err, &ref) {
		code = ref.Code
	}
	return &routeError{status: http.StatusForbidden, env: api.ErrorEnvelope{
		Type: string(errdefs.ClassConfig), Code: code, Message: err.Error(),
		DocsURL: envelope.DocsBase + "#" + code}}
}
