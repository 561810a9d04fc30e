package httpapi

// Preview URLs: requests to a sandbox's exposed port, proxied through its
// agent (Options.Ports). Three equivalent routes reach a port:
//
//	/v1/sandboxes/{id}/ports/{port}/…   the owner's token, like the API
//	/p/{token}/…                        a public port's own token
//	any path, with the headers Hutch-Sandbox-Id and Hutch-Sandbox-Port
//	(and Hutch-Preview-Token for a public port instead of the owner's)
//
// and a fourth by host name, {port}-{id}.{preview_domain} (hostroute.go).
//
// The request reaches the server as it came, less the route's prefix,
// hutch's own headers (the bearer token never leaves) and, but on the
// host route, its cookies (the daemon's host's: any application's); its
// body and the answer stream both ways, and a WebSocket upgrade is
// carried through.
// The answer is served as an opaque origin (Content-Security-Policy:
// sandbox), so a page a sandbox serves cannot call hutch's API with the
// browser's standing, even though it comes from the API's own origin.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Ports reaches sandboxes' exposed ports (the port service, portsvc,
// through the daemon).
type Ports interface {
	// ReachPort checks that the caller may reach port of sandbox id
	// (theirs, exposed): S002 otherwise.
	ReachPort(ctx context.Context, id string, port int) (PortAccess, error)
	// ReachPublic finds the public, unexpired port of token.
	ReachPublic(ctx context.Context, token string) (PortAccess, error)
	// ReachGranted is port of sandbox id, the caller's, exposed or not,
	// for a request a grant admitted (previewhost.WithGrant).
	ReachGranted(ctx context.Context, id string, port int) (PortAccess, error)
}

// PortAccess is a port a request may reach.
type PortAccess struct {
	// SandboxID and Port name the port: its kept-alive connections are
	// shared under them.
	SandboxID string
	Port      int
	// CORS are the origins whose pages the port answers.
	CORS []string
	// Host is the Host header the server sees ("" the request's own):
	// the sandbox's preview host_header.
	Host string
	// Dial connects to the port through its sandbox's agent.
	Dial func(ctx context.Context) (net.Conn, error)
}

func (a PortAccess) key() string { return a.SandboxID + ":" + strconv.Itoa(a.Port) }

// previewCSP makes a previewed page an opaque origin: scripts run, but
// cannot act as the API's origin.
const previewCSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

// previewMethods are the methods a preview route takes (HEAD with GET).
var previewMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// previewRoutes are the preview routes, for New's table.
func (s *server) previewRoutes() []route {
	var out []route
	for _, m := range previewMethods {
		out = append(out,
			route{m, "/v1/sandboxes/{id}/ports/{port}/{rest...}", s.preview, false, routeDoc{raw: "*/*", rawBody: "*/*",
				summary: "The sandbox's exposed port: the request goes to its server as it came (the owner's token needed); the answer is the server's. With preview_domain set, every path of the host {port}-{id}.{preview_domain} reaches the port too (its host_url)"}},
			route{m, publicPattern, s.servePublicPreview, true, routeDoc{raw: "*/*", rawBody: "*/*",
				summary: "A public port: the request goes to its server as it came (the token in the path is its authority); the answer is the server's"}})
	}
	return out
}

// isPreview reports whether r goes to a sandbox's port: its body is
// streamed, not read first.
func isPreview(r *http.Request) bool {
	return r.Pattern == hostPattern || strings.HasPrefix(r.Pattern, r.Method+" /p/") || strings.Contains(r.Pattern, "/ports/{port}/")
}

// publicPattern is the public route's path in a request's Pattern.
const publicPattern = "/p/{token}/{rest...}"

// publicPreview reports whether pattern, the route a request matched, is
// the public route: what the request goes to decides, never its headers
// (a header route's request was moved to that path before).
func publicPreview(pattern string) bool {
	method, path, ok := strings.Cut(pattern, " ")
	return ok && path == publicPattern && slices.Contains(previewMethods, method)
}

// headerRoute sends a request that names a sandbox's port in its headers
// to the path route (or, with a preview token, the public one).
func headerRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, port := r.Header.Get(api.HeaderSandboxID), r.Header.Get(api.HeaderSandboxPort)
		if id != "" && port != "" {
			r = r.Clone(r.Context())
			prefix := "/v1/sandboxes/" + url.PathEscape(id) + "/ports/" + url.PathEscape(port)
			if token := r.Header.Get(api.HeaderPreviewToken); token != "" {
				prefix = "/p/" + url.PathEscape(token)
			}
			r.URL.Path = prefix + r.URL.Path
			r.URL.RawPath = ""
			r.RequestURI = r.URL.RequestURI()
		}
		next.ServeHTTP(w, r)
	})
}

var errNoPreviews = transportError(http.StatusNotFound, "route_not_found", "this daemon serves no previews")

// preview serves the path route.
func (s *server) preview(r *http.Request, _ []byte) (any, error) {
	if s.ports == nil {
		return nil, errNoPreviews
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		return nil, errdefs.Malformed("port %q is not a TCP port", clipText(r.PathValue("port")))
	}
	acc, err := s.reachPort(r.Context(), r.PathValue("id"), port)
	if err != nil {
		return nil, err
	}
	return s.pathAnswer(r, acc), nil
}

// pathAnswer proxies r, a request of a path route, to acc's port: the
// path less the route's prefix, the answer an opaque origin.
func (s *server) pathAnswer(r *http.Request, acc PortAccess) *previewAnswer {
	return &previewAnswer{r: r, transport: s.previews.transport(acc), cors: acc.CORS, host: acc.Host, path: "/" + r.PathValue("rest"), csp: previewCSP, timeout: s.writeTimeout}
}

// servePublicPreview serves the public route.
func (s *server) servePublicPreview(r *http.Request, _ []byte) (any, error) {
	if s.ports == nil {
		return nil, errNoPreviews
	}
	acc, err := s.ports.ReachPublic(r.Context(), r.PathValue("token"))
	if err != nil {
		return nil, err
	}
	return s.pathAnswer(r, acc), nil
}

func clipText(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// previewAnswer proxies one request through its port's transport.
type previewAnswer struct {
	r         *http.Request
	transport http.RoundTripper
	cors      []string
	// path and rawPath are the request's path as the server gets it
	// (rawPath "" when path's plain escaping is right).
	path, rawPath string
	// csp is the answer's Content-Security-Policy.
	csp string
	// ownCookies says the request's cookies are its host's own (the host
	// route): they go to the server, less hutch's. On the other routes
	// the host is the daemon's, whose cookies are every application's on
	// it (browsers do not isolate cookies by port): none goes.
	ownCookies bool
	// host is the Host header the server sees ("" the request's).
	host    string
	timeout time.Duration
}

// corsAllows reports whether a port with cors answers pages of origin.
func corsAllows(cors []string, origin string) bool {
	return origin != "" && (slices.Contains(cors, "*") || slices.Contains(cors, origin))
}

func (p *previewAnswer) stream(w http.ResponseWriter, _ io.Writer) int {
	origin := p.r.Header.Get("Origin")
	allowed := corsAllows(p.cors, origin)
	if allowed && p.r.Method == http.MethodOptions && p.r.Header.Get("Access-Control-Request-Method") != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", strings.Join(previewMethods, ", "))
		if req := p.r.Header.Get("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Vary", "Origin")
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "sandbox"
			pr.Out.URL.Path, pr.Out.URL.RawPath = p.path, p.rawPath
			pr.Out.Host = pr.In.Host
			if p.host != "" {
				pr.Out.Host = p.host
			}
			for _, h := range []string{"Authorization", api.HeaderSandboxID, api.HeaderSandboxPort, api.HeaderPreviewToken} {
				pr.Out.Header.Del(h)
			}
			auth.DropBearerProtocol(pr.Out.Header)
			if p.ownCookies {
				dropPreviewCookie(pr.Out.Header)
			} else {
				pr.Out.Header.Del("Cookie")
			}
		},
		Transport:     p.transport,
		FlushInterval: -1, // stream the answer as it comes
		BufferPool:    proxyBuffers,
		ModifyResponse: func(res *http.Response) error {
			dropSetPreviewCookie(res.Header)
			res.Header.Set("Content-Security-Policy", p.csp)
			if allowed {
				res.Header.Set("Access-Control-Allow-Origin", origin)
				res.Header.Add("Vary", "Origin")
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "the sandbox's server did not answer: "+err.Error(), http.StatusBadGateway)
		},
	}
	rw := &refreshingWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: p.timeout}
	_ = rw.rc.SetWriteDeadline(time.Time{})
	sw := &statusWriter{ResponseWriter: rw}
	rp.ServeHTTP(sw, p.r)
	if sw.status == 0 {
		return http.StatusOK
	}
	return sw.status
}

// portRoutes are the routes of the port functions.
func (s *server) portRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/sandboxes/{id}/ports", routeDoc{fn: api.FnPortExpose, body: true}, sandboxParam),
		s.fnRoute("GET", "/v1/sandboxes/{id}/ports", routeDoc{fn: api.FnPortList}, sandboxParam),
		{"DELETE", "/v1/sandboxes/{id}/ports/{port}", s.unexpose, false, routeDoc{fn: api.FnPortUnexpose}},
		{"GET", "/v1/sandboxes/{id}/forward/{port}", s.forward, false, routeDoc{summary: "A raw TCP connection to the exposed port, over a WebSocket (binary frames): hutch port-forward", raw: "application/octet-stream"}},
	}
}

// unexpose is sandbox::port::unexpose of {port}.
func (s *server) unexpose(r *http.Request, _ []byte) (any, error) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil {
		return nil, errdefs.Malformed("port %q is not a TCP port", clipText(r.PathValue("port")))
	}
	body, _ := json.Marshal(api.PortRequest{SandboxID: r.PathValue("id"), Port: port})
	return s.dispatch(r, api.FnPortUnexpose, body, functions.Params{})
}

// forward is GET /v1/sandboxes/{id}/forward/{port}: a WebSocket whose
// binary frames carry a raw TCP connection to the exposed port (hutch
// port-forward), for any protocol.
func (s *server) forward(r *http.Request, _ []byte) (any, error) {
	if s.ports == nil {
		return nil, transportError(http.StatusNotFound, "route_not_found", "this daemon serves no ports")
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return nil, transportError(http.StatusUpgradeRequired, "websocket_required", "GET /v1/sandboxes/{id}/forward/{port} is a WebSocket: send Upgrade: websocket")
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		return nil, errdefs.Malformed("port %q is not a TCP port", clipText(r.PathValue("port")))
	}
	acc, err := s.ports.ReachPort(r.Context(), r.PathValue("id"), port)
	if err != nil {
		return nil, err
	}
	conn, err := acc.Dial(r.Context())
	if err != nil {
		return nil, err
	}
	return &forwardSession{s: s, r: r, conn: conn}, nil
}

// forwardSession pipes one WebSocket and one connection.
type forwardSession struct {
	s    *server
	r    *http.Request
	conn net.Conn
}

func (f *forwardSession) stream(w http.ResponseWriter, _ io.Writer) int {
	defer f.conn.Close()
	f.s.computing(w)                                                                        // the connection's bytes have no deadline of their own
	ws, err := websocket.Accept(w, f.r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // the guard checked the origin
	if err != nil {
		return http.StatusBadRequest
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithCancel(f.r.Context())
	defer cancel()
	nc := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	go func() {
		_, _ = io.Copy(f.conn, nc)
		if cw, ok := f.conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	// The connection ends when the port's side does; the client's end
	// only shuts the port's input.
	_, _ = io.Copy(nc, f.conn)
	ws.Close(websocket.StatusNormalClosure, "")
	return http.StatusSwitchingProtocols
}

// proxyBuffers are the preview proxy's copy buffers (issue 46: 5): a port
// message carries up to 256 KiB, which httputil's 32 KiB buffer took
// in eight reads and eight flushed writes to the client.
var proxyBuffers httputil.BufferPool = &bufferPool{size: 256 << 10}

type bufferPool struct {
	size int
	p    sync.Pool
}

func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, b.size)
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) == b.size {
		buf = buf[:b.size]
		b.p.Put(&buf)
	}
}

// Kept-alive connections to ports: each reached port has a transport of
// its own (its connections are the agent's Dial streams), the latest
// maxPortTransports kept; an evicted one's idle connections are closed.
const (
	maxPortTransports = 128
	portIdleTimeout   = 30 * time.Second
)

type portTransports struct {
	mu sync.Mutex
	// The fields below are guarded by mu.
	byKey map[string]*portTransport
	tick  uint64
}

type portTransport struct {
	t    *http.Transport
	used uint64
}

// transport is acc's port's transport, made on first use.
func (pt *portTransports) transport(acc PortAccess) http.RoundTripper {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.byKey == nil {
		pt.byKey = map[string]*portTransport{}
	}
	pt.tick++
	key := acc.key()
	if e, ok := pt.byKey[key]; ok {
		e.used = pt.tick
		return e.t
	}
	if len(pt.byKey) >= maxPortTransports {
		var oldest string
		for k, e := range pt.byKey {
			if oldest == "" || e.used < pt.byKey[oldest].used {
				oldest = k
			}
		}
		pt.byKey[oldest].t.CloseIdleConnections()
		delete(pt.byKey, oldest)
	}
	dial := acc.Dial
	t := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     portIdleTimeout,
		DisableCompression:  true,
	}
	pt.byKey[key] = &portTransport{t: t, used: pt.tick}
	return t
}
