package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		path     string
		status   int
		typ      string
		contains string
	}{
		{"/ui/", http.StatusOK, "text/html", `<script type="module" src="js/app.js">`},
		{"/ui/js/app.js", http.StatusOK, "text/javascript", "signedIn"},
		{"/ui/style.css", http.StatusOK, "text/css", ":root"},
		{"/ui/vendor/xterm/xterm.mjs", http.StatusOK, "text/javascript", "Terminal"},
		{"/ui/vendor/xterm/LICENSE", http.StatusOK, "", "MIT"},
		{"/ui", http.StatusMovedPermanently, "", ""},
		{"/ui/nope.js", http.StatusNotFound, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Content-Security-Policy"); got != policy {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			if !strings.HasPrefix(w.Header().Get("Content-Type"), tt.typ) {
				t.Errorf("Content-Type = %q, want %s", w.Header().Get("Content-Type"), tt.typ)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("body does not contain %q", tt.contains)
			}
		})
	}
}

// TestPolicyIsStrict keeps the policy free of what would let injected
// markup run: inline code, eval, remote origins.
func TestPolicyIsStrict(t *testing.T) {
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "*"} {
		if strings.Contains(policy, bad) {
			t.Errorf("policy contains %q: %s", bad, policy)
		}
	}
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("policy lacks %q", want)
		}
	}
}
