package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/http/httptest"
	"testing"
)

func TestOwnerPeer(t *testing.T) {
	toks, err := New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	local := toks.WithLocalOwner("alice")
	cert := func(cn string, verified bool) *tls.ConnectionState {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		st := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		if verified {
			st.VerifiedChains = [][]*x509.Certificate{{c}}
		}
		return st
	}
	onSocket := context.WithValue(context.Background(), localSocketKey{}, true)
	tests := []struct {
		name   string
		toks   *Tokens
		ctx    context.Context
		tls    *tls.ConnectionState
		header string
		owner  string
		err    error
	}{
		{"verified cert", toks, context.Background(), cert("carol", true), "", "carol", nil},
		{"cert wins over token", toks, context.Background(), cert("carol", true), "Bearer " + bobTok, "carol", nil},
		{"unverified cert", toks, context.Background(), cert("carol", false), "", "", ErrMissing},
		{"unverified cert with token", toks, context.Background(), cert("carol", false), "Bearer " + bobTok, "bob", nil},
		{"bad common name", toks, context.Background(), cert("../x", true), "", "", ErrInvalid},
		{"socket with local owner", local, onSocket, nil, "", "alice", nil},
		{"socket token wins", local, onSocket, nil, "Bearer " + bobTok, "bob", nil},
		{"socket bad token", local, onSocket, nil, "Bearer nope-nope-nope-nope", "", ErrInvalid},
		{"socket without local owner", toks, onSocket, nil, "", "", ErrMissing},
		{"tcp with local owner", local, context.Background(), nil, "", "", ErrMissing},
		{"auth off", (*Tokens)(nil).WithLocalOwner("x"), onSocket, nil, "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(tc.ctx, "GET", "/v1/sandboxes", nil)
			r.TLS = tc.tls
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			owner, err := tc.toks.Owner(r)
			if owner != tc.owner || !errors.Is(err, tc.err) {
				t.Fatalf("Owner = %q, %v; want %q, %v", owner, err, tc.owner, tc.err)
			}
		})
	}
}

func TestConnContext(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/s.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("unix", dir+"/s.sock"); err == nil {
			defer c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !OnLocalSocket(ConnContext(context.Background(), c)) {
		t.Error("a Unix connection is not marked as on the local socket")
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		if c, err := net.Dial("tcp", tcp.Addr().String()); err == nil {
			defer c.Close()
		}
	}()
	tc, err := tcp.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if OnLocalSocket(ConnContext(context.Background(), tc)) {
		t.Error("a TCP connection is marked as on the local socket")
	}
}

// TestReplace: a reload's tokens take over; turning auth on or off is
// refused.
func TestReplace(t *testing.T) {
	toks, _ := New(map[string]string{"alice": aliceTok})
	next, _ := New(map[string]string{"bob": bobTok})
	if err := toks.Replace(next.WithLocalOwner("bob")); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+aliceTok)
	if _, err := toks.Owner(r); !errors.Is(err, ErrInvalid) {
		t.Errorf("alice's old token after the reload: %v, want ErrInvalid", err)
	}
	r.Header.Set("Authorization", "Bearer "+bobTok)
	if o, err := toks.Owner(r); o != "bob" || err != nil {
		t.Errorf("bob's new token: %q, %v", o, err)
	}
	if err := toks.Replace(nil); err == nil {
		t.Error("turning auth off live was accepted")
	}
	if err := (*Tokens)(nil).Replace(next); err == nil {
		t.Error("turning auth on live was accepted")
	}
}
