package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// TestGuard checks that requests a web page can make never reach a
// function, while curl-like requests do.
func TestGuard(t *testing.T) {
	guard, err := webguard.New([]string{"hutch.example.com"}, []string{"http://localhost:5173"})
	if err != nil {
		t.Fatal(err)
	}
	create := `{"image":"python"}`
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string // error code; "" for a success
	}{
		{"curl -d", "POST", "/v1/sandboxes", create,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 200, ""},
		{"configured host", "POST", "/v1/sandboxes", create, map[string]string{"Host": "hutch.example.com:3111"}, 200, ""},
		{"allowed origin", "POST", "/v1/sandboxes", create,
			map[string]string{"Origin": "http://localhost:5173", "Sec-Fetch-Site": "same-site"}, 200, ""},
		{"rebound page", "POST", "/v1/sandboxes", create,
			map[string]string{"Host": "evil.example:3111", "Origin": "http://evil.example:3111"}, 403, webguard.CodeHostNotAllowed},
		{"rebound healthz", "GET", "/healthz", "", map[string]string{"Host": "evil.example:3111"}, 403, webguard.CodeHostNotAllowed},
		{"rebound unknown route", "GET", "/nope", "", map[string]string{"Host": "evil.example"}, 403, webguard.CodeHostNotAllowed},
		{"simple request from a page", "POST", "/v1/sandboxes", create,
			map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, webguard.CodeOriginNotAllowed},
		{"function route from a page", "POST", "/v1/functions/sandbox::create", create,
			map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, webguard.CodeOriginNotAllowed},
		{"cross-site without origin", "GET", "/v1/sandboxes", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, webguard.CodeOriginNotAllowed},
		// A public preview is decided by the route the request takes,
		// not by its headers (issue 33): a preview token and a port
		// without a sandbox id name no preview, so the API's route is
		// guarded as ever.
		{"preview headers on an API route", "POST", "/v1/sandboxes", create,
			map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain", "Hutch-Preview-Token": "x", "Hutch-Sandbox-Port": "8000"}, 403, webguard.CodeOriginNotAllowed},
		{"preview headers on the function route", "POST", "/v1/functions/sandbox::create", create,
			map[string]string{"Sec-Fetch-Site": "cross-site", "Hutch-Preview-Token": "x", "Hutch-Sandbox-Port": "8000"}, 403, webguard.CodeOriginNotAllowed},
		{"a public path that leaves /p/", "POST", "/p/x/../../v1/sandboxes", create,
			map[string]string{"Origin": "https://evil.example"}, 403, webguard.CodeOriginNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Guard: guard})
			status, m, raw := do(t, h, tc.method, tc.path, tc.body, tc.hdr)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, raw)
			}
			if tc.code == "" {
				return
			}
			env, _ := m["error"].(map[string]any)
			if env["code"] != tc.code || env["type"] != "config" || env["message"] == "" {
				t.Errorf("envelope %v, want code %s of type config", env, tc.code)
			}
			if calls := fake.Calls(); len(calls) != 0 {
				t.Errorf("a refused request reached the manager: %v", calls)
			}
		})
	}
}

// TestGuardPreflight checks the CORS preflight of an allowed origin.
func TestGuardPreflight(t *testing.T) {
	guard, err := webguard.New(nil, []string{"http://localhost:5173"})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{Guard: guard})
	req := newRequest("OPTIONS", "/v1/sandboxes", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "POST")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
}
