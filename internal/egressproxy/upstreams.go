package egressproxy

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// Bounds of the upstream connections kept alive: the sandboxes that have
// a transport (past it, every transport is dropped and made anew), the
// idle connections of one sandbox and of one of its hosts, and how long
// one stays idle.
const (
	maxUpstreamSandboxes = 256
	idlePerSandbox       = 8
	idlePerHost          = 4
	idleUpstream         = 30 * time.Second
)

// upstreams keeps each sandbox's HTTP requests' upstream connections
// alive for its next requests to the same host and port: one transport
// per sandbox, under one policy. A connection is never shared between
// sandboxes, nor kept across a change of the sandbox's policy or of what
// its record opens: each was dialed for a decision that every request it
// carries would get again (each request is decided before it is sent).
type upstreams struct {
	base *http.Transport

	mu sync.Mutex
	by map[string]*upstream // by sandbox id; guarded by mu
}

// upstream is one sandbox's transport and what it was made under.
type upstream struct {
	key upstreamKey
	tr  *http.Transport
}

// upstreamKey is what a sandbox's connections were admitted under.
type upstreamKey struct {
	policy      *egress.Policy
	openPrivate bool
	nameservers string
}

func newUpstreams(base *http.Transport) *upstreams {
	return &upstreams{base: base, by: map[string]*upstream{}}
}

// of is sb's transport, made anew when sb's policy or record changed.
func (u *upstreams) of(sb Sandbox) *http.Transport {
	key := upstreamKey{sb.Policy, sb.OpenPrivate, strings.Join(sb.Nameservers, ",")}
	u.mu.Lock()
	defer u.mu.Unlock()
	if up := u.by[sb.ID]; up != nil {
		if up.key == key {
			return up.tr
		}
		up.tr.CloseIdleConnections()
	}
	if len(u.by) >= maxUpstreamSandboxes {
		u.closeLocked()
	}
	tr := u.base.Clone()
	tr.DisableKeepAlives = false
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.IdleConnTimeout = idlePerSandbox, idlePerHost, idleUpstream
	u.by[sb.ID] = &upstream{key: key, tr: tr}
	return tr
}

// forget closes sandbox id's idle connections and drops its transport
// (its connections in use close as their requests end).
func (u *upstreams) forget(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if up := u.by[id]; up != nil {
		up.tr.CloseIdleConnections()
		delete(u.by, id)
	}
}

func (u *upstreams) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closeLocked()
}

// closeLocked drops every transport. u.mu must be held.
func (u *upstreams) closeLocked() {
	for _, up := range u.by {
		up.tr.CloseIdleConnections()
	}
	clear(u.by)
}
