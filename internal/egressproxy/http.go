package egressproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
)

// Sizes of the HTTP side: the upstream TLS sessions kept for resumption,
// the transport's write buffer, and the buffer of a response body's copy
// to the sandbox (conn.ReadFrom).
const (
	upstreamSessions = 1024
	copyBuffer       = 64 << 10
	bodyBuffer       = 256 << 10
)

// bodyBuffers are the body copies' buffers, reused.
var bodyBuffers = sync.Pool{New: func() any { return new([bodyBuffer]byte) }}

// ReadFrom copies a response body to the sandbox (net/http's response
// writer hands it a body with a known length): in reads and writes of up
// to bodyBuffer bytes, not io.Copy's 32 KiB, so a large download costs a
// few syscalls per MiB.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	buf := bodyBuffers.Get().(*[bodyBuffer]byte)
	defer bodyBuffers.Put(buf)
	return io.CopyBuffer(struct{ io.Writer }{c.Conn}, r, buf[:])
}

// httpSide serves the sandboxes' plain HTTP connections: one http.Server
// over the connections the proxy hands it, goproxy forwarding each
// request its policy admits to the Host it names.
type httpSide struct {
	p         *Proxy
	srv       *http.Server
	ln        *chanListener
	proxy     *goproxy.ProxyHttpServer
	upstreams *upstreams
}

// connKey is the request context's *conn.
type connKey struct{}

// routeKey is the request context's admitted addresses ([]netip.AddrPort).
type routeKey struct{}

func newHTTPSide(p *Proxy) *httpSide {
	h := &httpSide{p: p, ln: &chanListener{conns: make(chan net.Conn), done: make(chan struct{})}}
	h.proxy = goproxy.NewProxyHttpServer()
	h.proxy.Logger = slogPrinter{p.log}
	h.proxy.Tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			addrs, _ := ctx.Value(routeKey{}).([]netip.AddrPort)
			if len(addrs) == 0 {
				return nil, errors.New("no admitted address")
			}
			return dial(ctx, addrs)
		},
		// The template of each sandbox's transport (upstreams), which
		// alone keeps connections.
		DisableKeepAlives: true,
		// Sessions with upstream servers resume (a name's certificate
		// was verified when its session began), which spares a full
		// handshake and a chain verification per terminated request.
		TLSClientConfig: &tls.Config{ClientSessionCache: tls.NewLRUClientSessionCache(upstreamSessions)},
		// Request bodies go up in 64 KiB writes, not 4 KiB (a response
		// body's large reads bypass the read buffer: conn.ReadFrom).
		WriteBufferSize:        copyBuffer,
		ResponseHeaderTimeout:  5 * time.Minute,
		MaxResponseHeaderBytes: 1 << 20,
	}
	h.upstreams = newUpstreams(h.proxy.Tr)
	h.proxy.OnRequest().DoFunc(h.decide)
	h.srv = &http.Server{
		// Every request goes through transparent first: goproxy's own
		// CONNECT and absolute-URL paths are never reached as they are.
		Handler:           http.HandlerFunc(h.transparent),
		ReadHeaderTimeout: helloTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	go func() { _ = h.srv.Serve(h.ln) }()
	return h
}

// push hands the server a sandbox's HTTP connection.
func (h *httpSide) push(c *conn) {
	select {
	case h.ln.conns <- c:
	case <-h.ln.done:
		c.Close()
	}
}

func (h *httpSide) close() {
	h.ln.Close()
	_ = h.srv.Close()
	h.upstreams.close()
}

// transparent makes a request in origin form (the sandbox does not know
// of the proxy) absolute, toward its Host on the port the sandbox
// connected to, and has goproxy serve it; a CONNECT or an absolute-form
// request is refused. Over a terminated TLS connection, the Host must be
// the SNI's name.
func (h *httpSide) transparent(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	switch {
	case c == nil || r.Host == "":
		http.Error(w, "hutch egress proxy: a request without a Host", http.StatusBadRequest)
		return
	case r.Method == http.MethodConnect || r.URL.IsAbs() || r.URL.Host != "":
		// A proxy's request forms: the sandbox talks to servers, not to
		// a proxy it does not know of.
		http.Error(w, "hutch egress proxy: no CONNECT or absolute-form request", http.StatusBadRequest)
		return
	}
	host := r.Host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	r.URL.Scheme = "http"
	if c.sni != "" {
		if !strings.EqualFold(strings.TrimSuffix(host, "."), c.sni) {
			http.Error(w, "hutch egress proxy: the Host is not the TLS server name", http.StatusMisdirectedRequest)
			return
		}
		r.URL.Scheme = "https"
	}
	r.URL.Host = net.JoinHostPort(host, portString(c.dst.Port()))
	h.proxy.ServeHTTP(w, r)
}

// decide admits or refuses one request by its Host; over a terminated
// TLS connection, it applies the host's transform.
func (h *httpSide) decide(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		return r, goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusForbidden, "hutch egress proxy: not a sandbox's connection\n")
	}
	kind := "host"
	if c.sni != "" {
		kind = "sni"
	}
	addrs, d, err := h.p.route(c.sb, kind, r.URL.Hostname(), c.dst)
	if err != nil {
		return r, goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusForbidden, err.Error()+"\n")
	}
	if t := c.sb.Policy.TransformFor(r.URL.Hostname()); t != nil && c.sni != "" {
		used, err := t.Apply(r.Header, func(name string) (string, bool) {
			if h.p.opts.Secrets == nil {
				return "", false
			}
			return h.p.opts.Secrets.Value(c.sb.Owner, name)
		})
		if err != nil {
			d.Allowed, d.Rule = false, "transform: "+err.Error()
			h.p.audit.record(c.sb, d)
			return r, goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusBadGateway, "hutch egress proxy: "+err.Error()+"\n")
		}
		d.Secrets = used
	}
	h.p.audit.record(c.sb, d)
	// The request goes up on a connection of c.sb's own under the policy
	// that admitted it, kept alive whatever the sandbox asked of its own
	// connection (the server answers that: its Connection was read).
	tr := h.upstreams.of(c.sb)
	ctx.RoundTripper = goproxy.RoundTripperFunc(func(r *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
		return tr.RoundTrip(r)
	})
	out := r.WithContext(context.WithValue(r.Context(), routeKey{}, addrs))
	out.Close = false
	return out, nil
}

// chanListener is a net.Listener of the connections pushed to it.
type chanListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// slogPrinter is goproxy's logger: its warnings, at debug level (they
// may carry what sandboxes send).
type slogPrinter struct{ log *slog.Logger }

func (s slogPrinter) Printf(format string, v ...any) {
	s.log.Debug("egress proxy", "msg", fmt.Sprintf(format, v...))
}
