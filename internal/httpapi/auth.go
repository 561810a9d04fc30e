package httpapi

import (
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hutch-dev/hutch/internal/auth"
)

// authenticate checks r's bearer token (Options.Auth) and returns r acting
// for the token's owner (auth.WithOwner), whom the manager scopes every
// lookup and list by. A missing token is 401 "unauthorized", with a
// WWW-Authenticate challenge; a token of no owner is 403 "forbidden".
func (s *server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	if r, ok := granted(r); ok { // issue 37: a transport in front admitted it (previewgrant.go)
		return r, nil
	}
	if !s.auth.Enabled() {
		return r, nil
	}
	owner, err := s.auth.Owner(r)
	switch {
	case err == nil:
		return r.WithContext(auth.WithOwner(r.Context(), owner)), nil
	case errors.Is(err, auth.ErrMissing):
		w.Header().Set("WWW-Authenticate", `Bearer realm="hutch"`)
		return nil, transportError(http.StatusUnauthorized, "unauthorized",
			"this daemon requires a bearer token: send Authorization: Bearer <token> (the CLI and the Go client send $HUTCH_TOKEN)")
	}
	return nil, transportError(auth.Status(err), "forbidden",
		"the bearer token is not valid for this daemon (compare $HUTCH_TOKEN with the daemon's api_tokens)")
}

// withTrace continues the caller's trace from its W3C traceparent header
// when tracing is on (internal/telemetry installed a propagator).
func withTrace(r *http.Request) *http.Request {
	prop := otel.GetTextMapPropagator()
	if len(prop.Fields()) == 0 {
		return r
	}
	return r.WithContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
}
