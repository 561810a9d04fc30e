// Package portsvc is the port service: sandbox::port::* and the preview
// lookup of hutch's HTTP server. A server listening on a port of a
// sandbox's own loopback is reached through the agent (a Dial stream over
// the sandbox's session), so it needs no network. A port is reachable
// once its owner exposed it: with the owner's token, or, public, with a
// token of its own that may expire. Exposed ports go with their sandbox
// (Forget, which the daemon hooks to the core's stops). It reaches a
// sandbox only through sandbox.Sandboxes.
package portsvc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/previewhost"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxExposedPorts bounds the ports one sandbox exposes.
const maxExposedPorts = 32

// exposedPort is one exposed port.
type exposedPort struct {
	port    int
	public  bool
	token   string // of a public port
	expires time.Time
	cors    []string
}

// book is one sandbox's exposed ports.
type book struct {
	owner  string
	byPort map[int]*exposedPort
	// preview are the sandbox's preview terms (SetPreview).
	preview api.PreviewOptions
}

// Options are where the service's URLs point.
type Options struct {
	// PreviewDomain is config preview_domain: a port's host URL is
	// under it ("" for none).
	PreviewDomain string
	// ListenPort is the port of hutch's HTTP listener, which a port's
	// host URL names (none for 80).
	ListenPort int
	// TLS says the listener serves https (config tls), which a host URL
	// names, its default port 443.
	TLS bool
}

// Service answers sandbox::port::* (functions.Ports) and finds the port
// a preview request reaches.
type Service struct {
	sbs  sandbox.Sandboxes
	opts Options
	mu   sync.Mutex
	// books are the sandboxes' exposed ports, by sandbox id; mu guards it.
	books map[string]*book
}

// New is the port service over sbs.
func New(sbs sandbox.Sandboxes, opts Options) *Service {
	return &Service{sbs: sbs, opts: opts, books: map[string]*book{}}
}

// Forget drops the ports of sandbox id, which stopped.
func (s *Service) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.books, id)
}

// portInfo describes p, a port of sandbox id.
func (s *Service) portInfo(id string, p *exposedPort) api.PortInfo {
	info := api.PortInfo{SandboxID: id, Port: p.port, Public: p.public, CORS: p.cors,
		URL: "/v1/sandboxes/" + id + "/ports/" + strconv.Itoa(p.port) + "/", HostURL: s.hostURL(id, p)}
	if p.public {
		info.URL = "/p/" + p.token + "/"
	}
	if !p.expires.IsZero() {
		info.ExpiresAt = p.expires.UTC().Format(time.RFC3339)
	}
	return info
}

// hostURL is p's URL by host name under preview_domain ("" without one),
// on hutch's listener like the path URL; a public port's carries its
// token, which a browser trades for a cookie of the host.
func (s *Service) hostURL(id string, p *exposedPort) string {
	if s.opts.PreviewDomain == "" {
		return ""
	}
	u := url.URL{Scheme: "http", Host: previewhost.Name(s.opts.PreviewDomain, p.port, id), Path: "/"}
	defaultPort := 80
	if s.opts.TLS {
		u.Scheme, defaultPort = "https", 443
	}
	if s.opts.ListenPort != 0 && s.opts.ListenPort != defaultPort {
		u.Host += ":" + strconv.Itoa(s.opts.ListenPort)
	}
	if p.public {
		u.RawQuery = api.PreviewTokenParam + "=" + p.token
	}
	return u.String()
}

// lookup finds the caller's sandbox id, whatever its state (S001, S002).
func (s *Service) lookup(ctx context.Context, id string) (string, error) {
	h, release, err := s.sbs.Acquire(ctx, id, sandbox.UseLookup)
	if err != nil {
		return "", err
	}
	defer release()
	return h.ID(), nil
}

// ExposePort makes a port of a sandbox reachable (sandbox::port::expose);
// exposing it again replaces its terms (and a public port's token).
func (s *Service) ExposePort(ctx context.Context, req api.PortExposeRequest) (api.PortInfo, error) {
	if req.Port < 1 || req.Port > 65535 {
		return api.PortInfo{}, errdefs.Malformed("port must be between 1 and 65535, got %d", req.Port)
	}
	if req.ExpiresInSecs > 0 && !req.Public {
		return api.PortInfo{}, errdefs.Malformed("expires_in_secs applies to a public port")
	}
	if len(req.CORS) > 16 {
		return api.PortInfo{}, errdefs.Malformed("cors lists %d origins; at most 16", len(req.CORS))
	}
	for _, o := range req.CORS {
		if u, err := url.Parse(o); o != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "") {
			return api.PortInfo{}, errdefs.Malformed("cors origin %q must be scheme://host[:port], or *", spec.Clip(o, 64))
		}
	}
	// Any state but ended, as the sandbox's record: a paused sandbox's
	// ports may be exposed.
	h, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseRecord)
	if err != nil {
		return api.PortInfo{}, err
	}
	defer release()
	id := h.ID()
	if req.Public && s.private(id) {
		return api.PortInfo{}, errdefs.Malformed("sandbox %s is private (its preview option private, or E2B's allowPublicTraffic false): its ports are reached with the owner's token only", id)
	}
	p := &exposedPort{port: req.Port, public: req.Public, cors: req.CORS}
	if req.Public {
		b := make([]byte, 24)
		_, _ = rand.Read(b) // crypto/rand.Read never fails
		p.token = hex.EncodeToString(b)
		if req.ExpiresInSecs > 0 {
			p.expires = time.Now().Add(time.Duration(req.ExpiresInSecs) * time.Second)
		}
	}
	if err := s.add(ctx, id, p); err != nil {
		return api.PortInfo{}, err
	}
	if st := h.State(); st == sandbox.Stopping || st == sandbox.Stopped {
		// It stopped meanwhile, perhaps before the add: its ports go with it.
		s.Forget(id)
	}
	h.Emit(api.EventPortExposed, map[string]any{"port": req.Port, "public": req.Public})
	return s.portInfo(id, p), nil
}

// add exposes p of sandbox id, the caller's.
func (s *Service) add(ctx context.Context, id string, p *exposedPort) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bookOf(ctx, id)
	if _, ok := b.byPort[p.port]; !ok && len(b.byPort) >= maxExposedPorts {
		return errdefs.New(errdefs.CodeCapacity, "sandbox %s exposes %d ports; unexpose one first", id, maxExposedPorts)
	}
	b.byPort[p.port] = p
	return nil
}

// ListPorts lists a sandbox's exposed ports (sandbox::port::list).
func (s *Service) ListPorts(ctx context.Context, req api.PortListRequest) (api.PortListResponse, error) {
	id, err := s.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.PortListResponse{}, err
	}
	out := api.PortListResponse{Ports: []api.PortInfo{}}
	s.mu.Lock()
	if b := s.books[id]; b != nil {
		for _, p := range b.byPort {
			out.Ports = append(out.Ports, s.portInfo(id, p))
		}
	}
	s.mu.Unlock()
	sort.Slice(out.Ports, func(i, j int) bool { return out.Ports[i].Port < out.Ports[j].Port })
	return out, nil
}

// UnexposePort makes a port unreachable again (sandbox::port::unexpose).
func (s *Service) UnexposePort(ctx context.Context, req api.PortRequest) (api.PortInfo, error) {
	id, err := s.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.PortInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.exposed(id, req.Port)
	if !ok {
		return api.PortInfo{}, notExposed(id, req.Port)
	}
	delete(s.books[id].byPort, req.Port)
	return s.portInfo(id, p), nil
}

// exposed is port of sandbox id, if it is exposed; s.mu is held.
func (s *Service) exposed(id string, port int) (*exposedPort, bool) {
	b := s.books[id]
	if b == nil {
		return nil, false
	}
	p, ok := b.byPort[port]
	return p, ok
}

func notExposed(id string, port int) error {
	return errdefs.New(errdefs.CodeNotFound, "sandbox %s exposes no port %d", id, port).
		WithFix(map[string]any{"port": port}, "sandbox::port::expose makes it reachable")
}

// Target is where a preview request goes: a sandbox's exposed port,
// and the CORS origins it answers.
type Target struct {
	SandboxID string
	Port      int
	CORS      []string
	// Host is the Host header its server sees ("" the request's own).
	Host  string
	owner string
}

// PortFor checks that the caller may reach port of sandbox id: the
// sandbox is theirs and the port exposed. S002 otherwise, as for an
// unknown sandbox.
func (s *Service) PortFor(ctx context.Context, id string, port int) (Target, error) {
	id, err := s.lookup(ctx, id)
	if err != nil {
		return Target{}, err
	}
	s.mu.Lock()
	p, ok := s.exposed(id, port)
	t := Target{SandboxID: id, Port: port}
	if ok {
		t = s.target(id, s.books[id], p)
	}
	s.mu.Unlock()
	if !ok {
		return Target{}, notExposed(id, port)
	}
	return t, nil
}

// PublicPort finds the public port of token, unexpired; ok is false for
// none.
func (s *Service) PublicPort(token string) (Target, bool) {
	if len(token) != 48 {
		return Target{}, false
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, b := range s.books {
		for _, p := range b.byPort {
			if p.public && !b.preview.Private && subtle.ConstantTimeCompare([]byte(p.token), []byte(token)) == 1 && (p.expires.IsZero() || now.Before(p.expires)) {
				return s.target(id, b, p), true
			}
		}
	}
	return Target{}, false
}

// Dial connects to t's port through its sandbox's agent, as t's owner.
// The connection counts as the sandbox's activity.
func (s *Service) Dial(ctx context.Context, t Target) (net.Conn, error) {
	h, release, err := s.sbs.Acquire(auth.WithOwner(ctx, t.owner), t.SandboxID, sandbox.UseCall)
	if err != nil {
		return nil, err
	}
	defer release()
	conn, err := h.Agent().Dial(context.WithoutCancel(ctx), uint16(t.Port))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeNotFound, err, "reaching port "+strconv.Itoa(t.Port)+" of sandbox "+t.SandboxID)
	}
	return conn, nil
}
