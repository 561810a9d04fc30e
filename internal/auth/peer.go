package auth

import (
	"context"
	"errors"
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
	t.mu.RLock()
	defer t.mu.RUnlock()
	return &Tokens{entries: t.entries, local: owner}
}

// localOwner is the owner of token-less requests on the local socket.
func (t *Tokens) localOwner() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.local
}

// Replace makes t check n's tokens and local owner from now on (a config
// reload); requests under way keep the owner they got. Authentication
// cannot be turned on or off this way: both must be enabled.
func (t *Tokens) Replace(n *Tokens) error {
	if !t.Enabled() || !n.Enabled() {
		return errors.New("turning api_tokens on or off needs a restart")
	}
	n.mu.RLock()
	entries, local := n.entries, n.local
	n.mu.RUnlock()
	t.mu.Lock()
	t.entries, t.local = entries, local
	t.mu.Unlock()
	return nil
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
