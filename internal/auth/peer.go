package auth

import (
	"context"
	"net"
	"net/http"
)

// Credentials other than a bearer token: the local Unix socket, whose file
// mode and group decide who may connect, and a TLS client certificate that
// the listener verified against tls.client_ca.

type localSocketKey struct{}

// ConnContext marks the context of a connection accepted on a Unix socket
// (http.Server.ConnContext): its requests may act for the local owner.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if c.LocalAddr().Network() == "unix" {
		return context.WithValue(ctx, localSocketKey{}, true)
	}
	return ctx
}

// OnLocalSocket reports whether ctx is of a request that came over the
// local Unix socket (ConnContext).
func OnLocalSocket(ctx context.Context) bool {
	on, _ := ctx.Value(localSocketKey{}).(bool)
	return on
}

// WithLocalOwner returns t whose requests on the local socket that carry no
// token act for owner (config local_socket_owner); "" keeps them asking
// for a token. A nil t (authentication off) stays nil.
func (t *Tokens) WithLocalOwner(owner string) *Tokens {
	if t == nil {
		return nil
	}
	c := *t
	c.local = owner
	return &c
}

// certOwner is the owner named by the common name of r's TLS client
// certificate, when the listener verified one; ok is false without one.
func certOwner(r *http.Request) (owner string, ok bool, err error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return "", false, nil
	}
	cn := r.TLS.PeerCertificates[0].Subject.CommonName
	if !validOwner.MatchString(cn) {
		return "", true, ErrInvalid
	}
	return cn, true, nil
}
