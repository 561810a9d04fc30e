package auth

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	aliceTok = "alice-0123456789abcdef"
	bobTok   = "bob-0123456789abcdef00"
)

func TestOwner(t *testing.T) {
	toks, err := New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
		owner        string
		err          error
		status       int
	}{
		{"alice", "Bearer " + aliceTok, "alice", nil, 0},
		{"bob", "Bearer " + bobTok, "bob", nil, 0},
		{"scheme is case-insensitive", "bearer " + bobTok, "bob", nil, 0},
		{"extra spaces", "  Bearer   " + aliceTok + " ", "alice", nil, 0},
		{"no header", "", "", ErrMissing, 401},
		{"basic auth", "Basic YWxpY2U6eA==", "", ErrMissing, 401},
		{"bearer without token", "Bearer ", "", ErrMissing, 401},
		{"token alone", aliceTok, "", ErrMissing, 401},
		{"wrong token", "Bearer nope-0123456789abcdef", "", ErrInvalid, 403},
		{"prefix of a token", "Bearer " + aliceTok[:10], "", ErrInvalid, 403},
		{"token plus suffix", "Bearer " + aliceTok + "x", "", ErrInvalid, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/sandboxes", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			owner, err := toks.Owner(r)
			if owner != tt.owner || !errors.Is(err, tt.err) {
				t.Fatalf("Owner = %q, %v; want %q, %v", owner, err, tt.owner, tt.err)
			}
			if tt.err != nil && Status(err) != tt.status {
				t.Errorf("Status(%v) = %d, want %d", err, Status(err), tt.status)
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	toks, err := New(nil)
	if err != nil || toks != nil || toks.Enabled() {
		t.Fatalf("New(nil) = %v, %v; want nil, nil (disabled)", toks, err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer whatever")
	if owner, err := toks.Owner(r); owner != "" || err != nil {
		t.Fatalf("disabled Owner = %q, %v; want anonymous", owner, err)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name   string
		tokens map[string]string
		want   []string // substrings of the error
	}{
		{"short token", map[string]string{"alice": "short"}, []string{"api_tokens.alice", "at least 16 bytes"}},
		{"empty token", map[string]string{"alice": ""}, []string{"api_tokens.alice"}},
		{"space in token", map[string]string{"alice": "abc def 0123456789"}, []string{"api_tokens.alice", "spaces"}},
		{"empty owner", map[string]string{"": aliceTok}, []string{`owner ""`}},
		{"owner with slash", map[string]string{"a/b": aliceTok}, []string{`owner "a/b"`}},
		{"shared token", map[string]string{"alice": aliceTok, "bob": aliceTok}, []string{"api_tokens.bob", "owner alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.tokens)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, tok := range tt.tokens {
				if len(tok) >= 8 && strings.Contains(err.Error(), tok) {
					t.Errorf("error %q leaks the token", err)
				}
			}
		})
	}
}

func TestOwners(t *testing.T) {
	toks, err := New(map[string]string{"bob": bobTok, "alice": aliceTok})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(toks.Owners(), ","); got != "alice,bob" {
		t.Fatalf("Owners = %s", got)
	}
}

func TestNewNamedAndLookup(t *testing.T) {
	_, err := NewNamed("e2b.api_keys", map[string]string{"alice": "short"})
	if err == nil || !strings.Contains(err.Error(), "e2b.api_keys.alice") {
		t.Fatalf("err = %v, want it to name e2b.api_keys.alice", err)
	}
	keys, err := NewNamed("e2b.api_keys", map[string]string{"alice": "e2b_00112233445566778899aabbccddeeff"})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := keys.Lookup("e2b_00112233445566778899aabbccddeeff"); err != nil || o != "alice" {
		t.Fatalf("Lookup = %q, %v", o, err)
	}
	if _, err := keys.Lookup("e2b_ff"); err != ErrInvalid {
		t.Fatalf("unknown key: %v", err)
	}
	var off *Tokens
	if _, err := off.Lookup("anything"); err != ErrInvalid {
		t.Fatalf("no keys: %v", err)
	}
}
