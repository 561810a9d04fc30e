package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// A grant set by a transport in front (as E2B's on a trafficAccessToken)
// admits preview requests to its own sandbox's ports, exposed or not, as
// its owner; never another sandbox's, never an API route.
func TestPreviewGrant(t *testing.T) {
	_, ports, _ := hostRouteHandler(t)
	tokens, err := auth.New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	front := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g := r.Header.Get("Test-Grant"); g != "" {
				r = r.WithContext(previewhost.WithGrant(r.Context(), g, "alice"))
			}
			next.ServeHTTP(w, r)
		})
	}
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{Auth: tokens, Ports: ports, PreviewDomain: previewDomain, Front: front})
	byHeaders := func(grant, sandbox string) map[string]string {
		return map[string]string{"Test-Grant": grant, api.HeaderSandboxID: sandbox, api.HeaderSandboxPort: "7000"}
	}

	// Port 7000 is not exposed: the grant reaches it, the server sees the
	// masked host, by headers and by host.
	if s := sawOf(t, hostRequest(h, "GET", "127.0.0.1:3111", "/x", byHeaders(id, id))); s.Host != "masked.test:7000" || s.Path != "/x" {
		t.Errorf("by headers the server saw %+v", s)
	}
	if s := sawOf(t, hostRequest(h, "GET", hostOf("7000", id), "/y", map[string]string{"Test-Grant": id})); s.Host != "masked.test:7000" || s.Path != "/y" {
		t.Errorf("by host the server saw %+v", s)
	}
	// Without the grant, the owner's rules: no token is 401.
	if rec := hostRequest(h, "GET", "127.0.0.1:3111", "/x", byHeaders("", id)); rec.Code != http.StatusUnauthorized {
		t.Errorf("no grant: %d %s", rec.Code, rec.Body)
	}
	// A grant of another sandbox reaches nothing of this one.
	if rec := hostRequest(h, "GET", "127.0.0.1:3111", "/x", byHeaders("other-sandbox", id)); rec.Code != http.StatusNotFound {
		t.Errorf("another sandbox's grant: %d %s", rec.Code, rec.Body)
	}
	// An API route is never a grant's.
	if rec := hostRequest(h, "GET", "127.0.0.1:3111", "/v1/sandboxes", map[string]string{"Test-Grant": id}); rec.Code != http.StatusUnauthorized {
		t.Errorf("API route with a grant: %d %s", rec.Code, rec.Body)
	}
}
