// Package auth maps the bearer tokens of API callers to owners. It is the
// one place where a transport's credentials are checked: the REST API
// (httpapi) and the engine WebSocket upgrade (engineapi) both call
// Tokens.Owner on the incoming request and put the owner it returns into
// the request context with auth.WithOwner, where the manager scopes
// every lookup and listing by it.
//
// Tokens are compared in constant time: each candidate's SHA-256 digest is
// compared with every configured digest, so neither the position of a
// match nor the length of a token shows in the timing.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// MinTokenBytes is the shortest token accepted in the configuration.
const MinTokenBytes = 16

// The errors of Owner. A transport answers ErrMissing with 401 and
// ErrInvalid with 403 (see Status).
var (
	// ErrMissing is a request without "Authorization: Bearer <token>".
	ErrMissing = errors.New("missing bearer token")
	// ErrInvalid is a bearer token that belongs to no owner.
	ErrInvalid = errors.New("invalid bearer token")
)

// validOwner matches owner names: they appear in logs and metadata.
var validOwner = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Tokens is the token → owner map of one daemon. A nil *Tokens means
// authentication is off: every request acts for the anonymous owner "".
// It is safe for concurrent use.
type Tokens struct {
	// mu guards entries and local, which Replace changes (a config
	// reload).
	mu      sync.RWMutex
	entries []entry
	// local is the owner of token-less requests on the local socket
	// (WithLocalOwner), "" for none.
	local string
}

type entry struct {
	owner  string
	digest [sha256.Size]byte
}

// New builds the map from the config's api_tokens (owner → token). An empty
// map turns authentication off and returns nil. Errors name the offending
// key (api_tokens.<owner>); tokens never appear in them.
func New(tokens map[string]string) (*Tokens, error) { return NewNamed("api_tokens", tokens) }

// NewNamed is New for the owner → token map of config key, which its
// errors name (e2b.api_keys, say).
func NewNamed(key string, tokens map[string]string) (*Tokens, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	owners := make([]string, 0, len(tokens))
	for o := range tokens {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	t := &Tokens{}
	seen := map[[sha256.Size]byte]string{}
	var errs []error
	for _, o := range owners {
		tok := tokens[o]
		switch {
		case !validOwner.MatchString(o):
			errs = append(errs, fmt.Errorf("%s: owner %q must be 1 to 64 letters, digits or ._@- (starting with a letter or digit)", key, o))
			continue
		case len(tok) < MinTokenBytes:
			errs = append(errs, fmt.Errorf("%s.%s: the token must be at least %d bytes long (e.g. `openssl rand -hex 24`)", key, o, MinTokenBytes))
			continue
		case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			errs = append(errs, fmt.Errorf("%s.%s: the token must not contain spaces or control characters", key, o))
			continue
		}
		d := sha256.Sum256([]byte(tok))
		if other, dup := seen[d]; dup {
			errs = append(errs, fmt.Errorf("%s.%s: the same token is configured for owner %s; every owner needs its own", key, o, other))
			continue
		}
		seen[d] = o
		t.entries = append(t.entries, entry{owner: o, digest: d})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Enabled reports whether requests must carry a token.
func (t *Tokens) Enabled() bool {
	if t == nil {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.entries) > 0
}

// Owners lists the configured owners, sorted.
func (t *Tokens) Owners() []string {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.owner
	}
	return out
}

// Owner returns the owner whose token r carries in its Authorization
// header ("Bearer <token>", scheme case-insensitive) or, for a WebSocket
// upgrade without that header, in its bearer subprotocol (websocket.go).
// A TLS client certificate the listener verified names the owner by its
// common name instead (peer.go); a request on the local socket without a
// token acts for the local owner when one is set (WithLocalOwner).
// With authentication off it returns "" and no error. Otherwise a missing
// or non-bearer header is ErrMissing and an unknown token ErrInvalid.
func (t *Tokens) Owner(r *http.Request) (string, error) {
	if !t.Enabled() {
		return "", nil
	}
	if owner, ok := peerOwner(r.Context()); ok { // issue 36: forwarded by a node
		return owner, nil
	}
	if owner, ok, err := certOwner(r); ok {
		return owner, err
	}
	tok, ok := bearer(r.Header.Get("Authorization"))
	if !ok && r.Header.Get("Authorization") == "" {
		tok, ok = protocolToken(r)
		if !ok && OnLocalSocket(r.Context()) {
			if local := t.localOwner(); local != "" {
				return local, nil
			}
		}
	}
	if !ok {
		return "", ErrMissing
	}
	return t.lookup(tok)
}

// Lookup finds the owner of tok, comparing against every entry: ErrInvalid
// when it is no owner's (or authentication is off).
func (t *Tokens) Lookup(tok string) (string, error) {
	if !t.Enabled() {
		return "", ErrInvalid
	}
	return t.lookup(tok)
}

// lookup finds the owner of tok, comparing against every entry.
func (t *Tokens) lookup(tok string) (string, error) {
	d := sha256.Sum256([]byte(tok))
	t.mu.RLock()
	defer t.mu.RUnlock()
	owner, found := "", 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			owner, found = e.owner, 1
		}
	}
	if found == 0 {
		return "", ErrInvalid
	}
	return owner, nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" value.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// Status is the HTTP status a transport answers an error of Owner with:
// 401 for a missing token, 403 for a wrong one, 500 for anything else.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrMissing):
		return http.StatusUnauthorized
	case errors.Is(err, ErrInvalid):
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}
