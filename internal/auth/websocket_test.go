package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestOwnerFromBearerProtocol(t *testing.T) {
	toks, err := New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, upgrade, protocols, authorization string
		owner                                   string
		err                                     error
	}{
		{"offered beside another protocol", "websocket", "hutch.terminal, " + BearerProtocol(aliceTok), "", "alice", nil},
		{"offered alone", "websocket", BearerProtocol(bobTok), "", "bob", nil},
		{"not an upgrade", "", BearerProtocol(aliceTok), "", "", ErrMissing},
		{"unknown token", "websocket", BearerProtocol("nope-0123456789abcdef"), "", "", ErrInvalid},
		{"not base64url", "websocket", BearerProtocolPrefix + "a+b/", "", "", ErrMissing},
		{"empty", "websocket", BearerProtocolPrefix, "", "", ErrMissing},
		{"no protocol", "websocket", "hutch.terminal", "", "", ErrMissing},
		{"the header wins", "websocket", BearerProtocol(aliceTok), "Bearer " + bobTok, "bob", nil},
		{"a bad header is not replaced", "websocket", BearerProtocol(aliceTok), "Basic eA==", "", ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/sandboxes/x/pty", nil)
			if tt.upgrade != "" {
				r.Header.Set("Upgrade", tt.upgrade)
			}
			r.Header.Set("Sec-WebSocket-Protocol", tt.protocols)
			if tt.authorization != "" {
				r.Header.Set("Authorization", tt.authorization)
			}
			owner, err := toks.Owner(r)
			if owner != tt.owner || !errors.Is(err, tt.err) {
				t.Fatalf("Owner = %q, %v; want %q, %v", owner, err, tt.owner, tt.err)
			}
		})
	}
}

func TestDropBearerProtocol(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"only the token", []string{BearerProtocol(aliceTok)}, nil},
		{"the token among others", []string{"chat, " + BearerProtocol(aliceTok), "v2"}, []string{"chat, v2"}},
		{"no token", []string{"chat", "v2"}, []string{"chat, v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.in {
				h.Add("Sec-WebSocket-Protocol", v)
			}
			DropBearerProtocol(h)
			if got := h.Values("Sec-WebSocket-Protocol"); !slices.Equal(got, tt.want) {
				t.Fatalf("Sec-WebSocket-Protocol = %q, want %q", got, tt.want)
			}
		})
	}
}
