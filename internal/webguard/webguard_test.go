package webguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	p, err := New([]string{"hutch.example.com", "*.lan.example", "10.0.0.5", "[fd00::1]"},
		[]string{"https://ui.example.com", "http://localhost:5173"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		host    string
		headers map[string]string
		want    string // refusal code, "" for allowed
	}{
		{"loopback v4", "127.0.0.1:3111", nil, ""},
		{"loopback v4 range", "127.1.2.3:3111", nil, ""},
		{"loopback v6", "[::1]:3111", nil, ""},
		{"localhost", "localhost:3111", nil, ""},
		{"localhost upper case, trailing dot", "LOCALHOST.:3111", nil, ""},
		{"under localhost", "p-3000.localhost:3111", nil, ""},
		{"no port", "127.0.0.1", nil, ""},
		{"configured name", "hutch.example.com:3111", nil, ""},
		{"configured wildcard", "a.b.lan.example", nil, ""},
		{"configured address", "10.0.0.5:3111", nil, ""},
		{"configured v6 address", "[fd00::1]:3111", nil, ""},
		{"rebound name", "evil.example:3111", nil, CodeHostNotAllowed},
		{"wildcard base itself", "lan.example", nil, CodeHostNotAllowed},
		{"name ending like localhost", "evillocalhost:3111", nil, CodeHostNotAllowed},
		{"other address", "10.0.0.6:3111", nil, CodeHostNotAllowed},
		{"empty", "", nil, CodeHostNotAllowed},
		{"rebound page, same origin", "evil.example:3111", map[string]string{"Origin": "http://evil.example:3111"}, CodeHostNotAllowed},
		{"foreign origin", "127.0.0.1:3111", map[string]string{"Origin": "https://evil.example"}, CodeOriginNotAllowed},
		{"null origin", "127.0.0.1:3111", map[string]string{"Origin": "null"}, CodeOriginNotAllowed},
		{"other loopback port", "127.0.0.1:3111", map[string]string{"Origin": "http://127.0.0.1:8080"}, CodeOriginNotAllowed},
		{"same origin", "127.0.0.1:3111", map[string]string{"Origin": "http://127.0.0.1:3111"}, ""},
		{"same origin ws", "localhost:49134", map[string]string{"Origin": "ws://localhost:49134"}, ""},
		{"allowed origin", "127.0.0.1:3111", map[string]string{"Origin": "https://UI.example.com:443", "Sec-Fetch-Site": "cross-site"}, ""},
		{"allowed origin, other site", "127.0.0.1:3111", map[string]string{"Origin": "http://localhost:5173", "Sec-Fetch-Site": "same-site"}, ""},
		{"cross-site without origin", "127.0.0.1:3111", map[string]string{"Sec-Fetch-Site": "cross-site"}, CodeOriginNotAllowed},
		{"same-site without origin", "127.0.0.1:3111", map[string]string{"Sec-Fetch-Site": "same-site"}, CodeOriginNotAllowed},
		{"typed in the address bar", "127.0.0.1:3111", map[string]string{"Sec-Fetch-Site": "none"}, ""},
		{"same-origin fetch", "127.0.0.1:3111", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:3111"}, ""},
		{"simple request from a page", "127.0.0.1:3111", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, CodeOriginNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/sandboxes", nil)
			r.Host = tc.host
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			err := p.Check(r)
			var ref *Refusal
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check = %v, want allowed", err)
			case tc.want == "":
			case !errors.As(err, &ref):
				t.Fatalf("Check = %v, want refusal %s", err, tc.want)
			case ref.Code != tc.want:
				t.Fatalf("Check code = %s (%s), want %s", ref.Code, ref.Message, tc.want)
			}
		})
	}
}

func TestNilPolicyIsLoopbackOnly(t *testing.T) {
	var p *Policy
	for host, allowed := range map[string]bool{"127.0.0.1:1": true, "localhost": true, "example.com": false} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		if got := p.Check(r) == nil; got != allowed {
			t.Errorf("nil policy, Host %s: allowed %v, want %v", host, got, allowed)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		hosts, origins []string
		want           string
	}{
		{[]string{"http://x.example"}, nil, `allowed_hosts: "http://x.example"`},
		{[]string{"x.example:80"}, nil, `allowed_hosts: "x.example:80"`},
		{[]string{"*"}, nil, `allowed_hosts: "*"`},
		{nil, []string{"x.example"}, `allowed_origins: "x.example"`},
		{nil, []string{"ftp://x.example"}, "must be http or https"},
		{nil, []string{"http://x.example/path"}, `allowed_origins: "http://x.example/path"`},
	}
	for _, tc := range tests {
		_, err := New(tc.hosts, tc.origins)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want an error with %q", tc.hosts, tc.origins, err, tc.want)
		}
	}
}

func TestCORS(t *testing.T) {
	p, err := New(nil, []string{"http://localhost:5173"})
	if err != nil {
		t.Fatal(err)
	}
	pre := httptest.NewRequest(http.MethodOptions, "/v1/sandboxes", nil)
	pre.Header.Set("Origin", "http://localhost:5173")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	w := httptest.NewRecorder()
	if !p.CORS(w, pre) || w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("preflight from an allowed origin: %d %v", w.Code, w.Header())
	}
	other := httptest.NewRequest(http.MethodOptions, "/v1/sandboxes", nil)
	other.Header.Set("Origin", "https://evil.example")
	other.Header.Set("Access-Control-Request-Method", "POST")
	w = httptest.NewRecorder()
	if p.CORS(w, other) || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin got CORS headers: %v", w.Header())
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true, "[::1]": true,
		"::ffff:127.0.0.1": true, "0.0.0.0": false, "": false, "::": false, "10.0.0.1": false,
		"example.com": false, "a.localhost": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestIsHostName(t *testing.T) {
	for name, want := range map[string]bool{
		"localhost": true, "preview.example.com": true, "a-1.b2.example": true,
		"": false, "Preview.example.com": false, "*.example.com": false, "10.0.0.5": false,
		"-a.example": false, "a..example": false, "a_b.example": false, "example.com.": false,
		strings.Repeat("a", 64) + ".example": false, strings.Repeat("abcdefghi.", 26) + "example": false,
	} {
		if got := IsHostName(name); got != want {
			t.Errorf("IsHostName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCheckOriginLeavesHostAlone: CheckOrigin applies the Origin rules to
// a Host the policy does not know.
func TestCheckOriginLeavesHostAlone(t *testing.T) {
	var p *Policy
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Host = "8000-x.preview.example.com"
	if err := p.CheckOrigin(r); err != nil {
		t.Fatalf("no Origin: %v", err)
	}
	r.Header.Set("Origin", "http://8000-x.preview.example.com")
	if err := p.CheckOrigin(r); err != nil {
		t.Fatalf("same origin: %v", err)
	}
	r.Header.Set("Origin", "http://9000-x.preview.example.com")
	if err := p.CheckOrigin(r); err == nil {
		t.Fatal("a sibling's origin was allowed")
	}
}
