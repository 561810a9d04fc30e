package sandbox

// Ports: a server listening on a port of a sandbox's own loopback is
// reached through the agent (a Dial stream over the sandbox's session), so
// it needs no network. A port is reachable once its owner exposed it:
// with the owner's token, or, public, with a token of its own that may
// expire. Exposed ports go with their sandbox.

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

// portBook is a sandbox's exposed ports.
type portBook struct {
	mu     sync.Mutex
	byPort map[int]*exposedPort
}

// portInfo describes p, a port of sandbox id.
func (m *Manager) portInfo(id string, p *exposedPort) api.PortInfo {
	info := api.PortInfo{SandboxID: id, Port: p.port, Public: p.public, CORS: p.cors,
		URL: "/v1/sandboxes/" + id + "/ports/" + strconv.Itoa(p.port) + "/", HostURL: m.hostURL(id, p)}
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
func (m *Manager) hostURL(id string, p *exposedPort) string {
	if m.cfg.PreviewDomain == "" {
		return ""
	}
	u := url.URL{Scheme: "http", Host: previewhost.Name(m.cfg.PreviewDomain, p.port, id), Path: "/"}
	if m.listenPort != 0 && m.listenPort != 80 {
		u.Host += ":" + strconv.Itoa(m.listenPort)
	}
	if p.public {
		u.RawQuery = api.PreviewTokenParam + "=" + p.token
	}
	return u.String()
}

// ExposePort makes a port of a sandbox reachable (sandbox::port::expose);
// exposing it again replaces its terms (and a public port's token).
func (m *Manager) ExposePort(ctx context.Context, req api.PortExposeRequest) (api.PortInfo, error) {
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
			return api.PortInfo{}, errdefs.Malformed("cors origin %q must be scheme://host[:port], or *", clip(o, 64))
		}
	}
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.PortInfo{}, err
	}
	if st, end := sb.current(); st.ended() {
		return api.PortInfo{}, stoppedError(sb.rec.ID, end)
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
	sb.ports.mu.Lock()
	defer sb.ports.mu.Unlock()
	if sb.ports.byPort == nil {
		sb.ports.byPort = map[int]*exposedPort{}
	}
	if _, ok := sb.ports.byPort[req.Port]; !ok && len(sb.ports.byPort) >= maxExposedPorts {
		return api.PortInfo{}, errdefs.New(errdefs.CodeCapacity, "sandbox %s exposes %d ports; unexpose one first", sb.rec.ID, maxExposedPorts)
	}
	sb.ports.byPort[req.Port] = p
	m.emitFor(sb, api.EventPortExposed, map[string]any{"port": req.Port, "public": req.Public})
	return m.portInfo(sb.rec.ID, p), nil
}

// ListPorts lists a sandbox's exposed ports (sandbox::port::list).
func (m *Manager) ListPorts(ctx context.Context, req api.PortListRequest) (api.PortListResponse, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.PortListResponse{}, err
	}
	out := api.PortListResponse{Ports: []api.PortInfo{}}
	sb.ports.mu.Lock()
	for _, p := range sb.ports.byPort {
		out.Ports = append(out.Ports, m.portInfo(sb.rec.ID, p))
	}
	sb.ports.mu.Unlock()
	sort.Slice(out.Ports, func(i, j int) bool { return out.Ports[i].Port < out.Ports[j].Port })
	return out, nil
}

// UnexposePort makes a port unreachable again (sandbox::port::unexpose).
func (m *Manager) UnexposePort(ctx context.Context, req api.PortRequest) (api.PortInfo, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.PortInfo{}, err
	}
	sb.ports.mu.Lock()
	defer sb.ports.mu.Unlock()
	p, ok := sb.ports.byPort[req.Port]
	if !ok {
		return api.PortInfo{}, notExposed(sb.rec.ID, req.Port)
	}
	delete(sb.ports.byPort, req.Port)
	return m.portInfo(sb.rec.ID, p), nil
}

func notExposed(id string, port int) error {
	return errdefs.New(errdefs.CodeNotFound, "sandbox %s exposes no port %d", id, port).
		WithFix(map[string]any{"port": port}, "sandbox::port::expose makes it reachable")
}

// PortTarget is where a preview request goes: a sandbox's exposed port,
// and the CORS origins it answers.
type PortTarget struct {
	SandboxID string
	Port      int
	CORS      []string
	owner     string
}

// PortFor checks that the caller may reach port of sandbox id: the
// sandbox is theirs and the port exposed. S002 otherwise, as for an
// unknown sandbox.
func (m *Manager) PortFor(ctx context.Context, id string, port int) (PortTarget, error) {
	sb, err := m.lookup(ctx, id)
	if err != nil {
		return PortTarget{}, err
	}
	sb.ports.mu.Lock()
	p, ok := sb.ports.byPort[port]
	sb.ports.mu.Unlock()
	if !ok {
		return PortTarget{}, notExposed(sb.rec.ID, port)
	}
	return PortTarget{SandboxID: sb.rec.ID, Port: port, CORS: p.cors, owner: sb.rec.Owner}, nil
}

// PublicPort finds the public port of token, unexpired; ok is false for
// none.
func (m *Manager) PublicPort(token string) (PortTarget, bool) {
	if len(token) != 48 {
		return PortTarget{}, false
	}
	m.mu.Lock()
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		sbs = append(sbs, sb)
	}
	m.mu.Unlock()
	now := time.Now()
	for _, sb := range sbs {
		sb.ports.mu.Lock()
		for _, p := range sb.ports.byPort {
			if p.public && subtle.ConstantTimeCompare([]byte(p.token), []byte(token)) == 1 && (p.expires.IsZero() || now.Before(p.expires)) {
				t := PortTarget{SandboxID: sb.rec.ID, Port: p.port, CORS: p.cors, owner: sb.rec.Owner}
				sb.ports.mu.Unlock()
				return t, true
			}
		}
		sb.ports.mu.Unlock()
	}
	return PortTarget{}, false
}

// Dial connects to t's port through its sandbox's agent, as t's owner.
// The connection counts as the sandbox's activity.
func (m *Manager) Dial(ctx context.Context, t PortTarget) (net.Conn, error) {
	sb, release, err := m.acquire(auth.WithOwner(ctx, t.owner), t.SandboxID, UseCall)
	if err != nil {
		return nil, err
	}
	defer release()
	conn, err := sb.client().Dial(context.WithoutCancel(ctx), uint16(t.Port))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeNotFound, err, "reaching port "+strconv.Itoa(t.Port)+" of sandbox "+t.SandboxID)
	}
	return conn, nil
}
