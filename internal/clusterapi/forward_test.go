package clusterapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
)

func TestTopLevelSandboxID(t *testing.T) {
	cases := map[string]string{
		`{"sandbox_id":"abc","argv":["x"]}`:                "abc",
		`{"argv":["sandbox_id"],"sandbox_id":"def"}`:       "def",
		`{"nested":{"sandbox_id":"no"},"sandbox_id":"ok"}`: "ok",
		`{"nested":{"sandbox_id":"no"}}`:                   "",
		`["sandbox_id","x"]`:                               "",
		`{"sandbox_id":7}`:                                 "",
		`{"argv":["trunc`:                                  "",
	}
	for body, want := range cases {
		if got := topLevelSandboxID([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// A function call's body reaches the API whole after its sandbox_id was
// read.
func TestSandboxOfKeepsTheBody(t *testing.T) {
	body := `{"sandbox_id":"abc","content":"` + strings.Repeat("x", peekBytes) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/v1/functions/sandbox::fs::write", strings.NewReader(body))
	id, r := sandboxOf(r)
	got, _ := io.ReadAll(r.Body)
	if id != "abc" || string(got) != body {
		t.Fatalf("id %q, body of %d bytes (sent %d)", id, len(got), len(body))
	}
	if id, _ := sandboxOf(httptest.NewRequest(http.MethodGet, "/v1/sandboxes/xyz/files/a", nil)); id != "xyz" {
		t.Fatalf("a route's id: %q", id)
	}
	if id, _ := sandboxOf(httptest.NewRequest(http.MethodGet, "/v1/sandboxes", nil)); id != "" {
		t.Fatalf("the list route's id: %q", id)
	}
}

// A call that says it comes from a node is served for the owner it
// carries only with the cluster's credential.
func TestServePeer(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.PeerToken = "peer-token-0123456789abcdef"
	tokens, err := auth.New(map[string]string{"alice": "alice-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Config: cfg, Tokens: tokens})
	var served string
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, err := tokens.Owner(r)
		if err != nil || r.Header.Get(HeaderToken) != "" || r.Header.Get(HeaderOwner) != "" {
			t.Errorf("served as %q (%v), headers %v", owner, err, r.Header)
		}
		served = owner
	}))
	for tok, want := range map[string]int{"": http.StatusForbidden, "wrong": http.StatusForbidden, cfg.Cluster.PeerToken: http.StatusOK} {
		served = ""
		r := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/abc", nil)
		r.Header.Set(HeaderOwner, "alice")
		if tok != "" {
			r.Header.Set(HeaderToken, tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want || (want == http.StatusOK) != (served == "alice") {
			t.Errorf("token %q: %d (served as %q), want %d", tok, w.Code, served, want)
		}
	}
	// Without cluster.peer_token no call is taken for a node's.
	cfg.Cluster.PeerToken = ""
	b := New(Options{Config: cfg, Tokens: tokens})
	r := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/abc", nil)
	r.Header.Set(HeaderOwner, "alice")
	r.Header.Set(HeaderToken, "")
	w := httptest.NewRecorder()
	b.Wrap(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("no peer token configured: %d", w.Code)
	}
}
