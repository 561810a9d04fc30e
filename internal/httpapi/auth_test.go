package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

const (
	aliceTok = "alice-0123456789abcdef"
	bobTok   = "bob-0123456789abcdef00"
)

func TestAuth(t *testing.T) {
	tokens, err := auth.New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	// The fake lists one sandbox named after the owner the request acts for.
	fake := &functionstest.Fake{ListFunc: func(ctx context.Context, _ api.ListRequest) (api.ListResponse, error) {
		owner := auth.OwnerFrom(ctx)
		return api.ListResponse{Sandboxes: []api.SandboxInfo{{SandboxID: id, Name: &owner}}}, nil
	}}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("hutch_sandboxes_live 1\n"))
	})
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Auth: tokens, Metrics: metrics})
	tests := []struct {
		name, method, path, auth string
		status                   int
		code                     string // error code, or a substring of the success body
	}{
		{"no token", "GET", "/v1/sandboxes", "", 401, `"code":"unauthorized"`},
		{"not bearer", "GET", "/v1/sandboxes", "Basic YWxpY2U6eA==", 401, `"code":"unauthorized"`},
		{"wrong token", "GET", "/v1/sandboxes", "Bearer wrong-0123456789abcdef", 403, `"code":"forbidden"`},
		{"alice", "GET", "/v1/sandboxes", "Bearer " + aliceTok, 200, `"name":"alice"`},
		{"bob", "GET", "/v1/sandboxes", "Bearer " + bobTok, 200, `"name":"bob"`},
		{"function route acts for owner", "POST", "/v1/functions/sandbox::list", "Bearer " + bobTok, 200, `"name":"bob"`},
		{"function route needs a token", "POST", "/v1/functions/sandbox::list", "", 401, `"code":"unauthorized"`},
		{"exec needs a token", "POST", "/v1/sandboxes/" + id + "/exec", "", 401, `"code":"unauthorized"`},
		{"healthz is public", "GET", "/healthz", "", 200, `"status":"ok"`},
		{"healthz says a token is needed", "GET", "/healthz", "", 200, `"auth":true`},
		{"prometheus needs a token", "GET", "/metrics", "", 401, `"code":"unauthorized"`},
		{"prometheus with a token", "GET", "/metrics", "Bearer " + aliceTok, 200, "hutch_sandboxes_live 1"},
		{"sandbox metrics", "GET", "/v1/sandboxes/" + id + "/metrics", "Bearer " + aliceTok, 200, `"cpu_seconds":1.5`},
		{"openapi needs a token", "GET", "/openapi.json", "", 401, `"code":"unauthorized"`},
		{"openapi with a token", "GET", "/openapi.json", "Bearer " + bobTok, 200, `"openapi":"3.1.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(tt.method, tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.code) {
				t.Fatalf("%s %s: %d %s; want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.status, tt.code)
			}
			if tt.status == 401 && rec.Header().Get("WWW-Authenticate") != `Bearer realm="hutch"` {
				t.Errorf("401 without a WWW-Authenticate challenge: %v", rec.Header())
			}
			for _, tok := range []string{aliceTok, bobTok} {
				if strings.Contains(rec.Body.String(), tok) {
					t.Errorf("answer leaks a token: %s", rec.Body)
				}
			}
		})
	}
}

func TestNoAuthActsForAnonymous(t *testing.T) {
	var owner = "unset"
	fake := &functionstest.Fake{ListFunc: func(ctx context.Context, _ api.ListRequest) (api.ListResponse, error) {
		owner = auth.OwnerFrom(ctx)
		return api.ListResponse{}, nil
	}}
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{})
	req := newRequest("GET", "/v1/sandboxes", nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || owner != "" {
		t.Fatalf("status %d owner %q; want 200 for the anonymous owner", rec.Code, owner)
	}
	// Without Options.Metrics there is no /metrics.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Fatalf("GET /metrics without metrics: %d", rec.Code)
	}
}
