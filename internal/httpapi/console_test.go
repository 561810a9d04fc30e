package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/console"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// TestConsoleIsMountedBehindTheGuard checks that the console's pages need
// no token (they hold no data) but pass the web guard like every route.
func TestConsoleIsMountedBehindTheGuard(t *testing.T) {
	tokens, err := auth.New(map[string]string{"alice": aliceTok})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{Auth: tokens, Console: console.Handler()})
	tests := []struct {
		name     string
		hdr      map[string]string
		path     string
		status   int
		contains string
	}{
		{"page without a token", nil, "/ui/", 200, "hutch console"},
		{"module without a token", nil, "/ui/js/api.js", 200, "Authorization"},
		{"bare path redirects", nil, "/ui", 301, ""},
		{"rebound host", map[string]string{"Host": "evil.example:3111"}, "/ui/", 403, "host_not_allowed"},
		{"cross-site page", map[string]string{"Origin": "https://evil.example"}, "/ui/", 403, "origin_not_allowed"},
		{"cross-site navigation", map[string]string{"Sec-Fetch-Site": "cross-site"}, "/ui/", 403, "origin_not_allowed"},
		{"API still needs a token", nil, "/v1/sandboxes", 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest("GET", tt.path, nil)
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			if host, ok := tt.hdr["Host"]; ok {
				req.Host = host
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.contains) {
				t.Fatalf("GET %s: %d %.200s; want %d with %q", tt.path, rec.Code, rec.Body, tt.status, tt.contains)
			}
			if tt.status == 200 && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("no Content-Security-Policy: %v", rec.Header())
			}
		})
	}
}
