// Package egressproxy is hutch's transparent egress proxy. While a
// sandbox's egress policy has name rules, the firewall (netplumb) leads
// its new TCP connections to ports 80, 443 and the ports its name rules
// name here, on the host's loopback; the proxy finds the sandbox by the
// connection's source address and the destination it asked for in
// conntrack (SO_ORIGINAL_DST), and decides on the name the connection
// carries: a TLS ClientHello's SNI (read with crypto/tls, never
// terminated) or each HTTP request's Host (served by goproxy). It then
// connects to that name as hutch's resolver answers it, never to the
// address the sandbox picked, so a denied name that shares an address
// with an allowed one stays refused. A connection without a name (an IP
// literal, TLS without SNI) passes only if a CIDR rule admits its
// address. Every decision is kept for GET /v1/sandboxes/{id}/egress;
// every refusal is an egress.denied event, rate-limited per sandbox.
package egressproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// Limits of the proxy.
const (
	// helloTimeout bounds the wait for a connection's first bytes (the
	// ClientHello, or an HTTP request's head).
	helloTimeout = 10 * time.Second
	// maxHello bounds the bytes read before a TLS connection's name is
	// known.
	maxHello = 64 << 10
	// dialTimeout bounds one connection to an upstream address.
	dialTimeout = 10 * time.Second
	// firstRead is the buffer of a connection's first read.
	firstRead = 4 << 10
	// maxConns bounds the connections in flight, all sandboxes together.
	maxConns = 4096
)

// Sandbox is the sandbox a connection comes from.
type Sandbox struct {
	ID, Owner string
	// Policy is its egress policy in force; nil for none.
	Policy *egress.Policy
	// OpenPrivate opens Options.Private to it (block_private_networks
	// off when it was made); false closes them.
	OpenPrivate bool
	// Nameservers are its resolver's upstreams (host:port), which the
	// names of its connections are resolved with; none means the host's.
	Nameservers []string
}

// Directory finds the running sandbox that has a network address.
type Directory interface {
	Sandbox(src netip.Addr) (Sandbox, bool)
}

// Resolver resolves a name as the sandboxes' resolver does for a sandbox
// whose upstream nameservers are upstreams (dnsgate.Server.Lookup), with
// the answer's TTL.
type Resolver interface {
	Lookup(name string, upstreams []string) ([]netip.Addr, time.Duration, error)
}

// Options configure a Proxy.
type Options struct {
	Resolver Resolver
	// Closed are the destinations no sandbox may reach (the pool);
	// loopback, link-local, multicast and the host's own addresses are
	// closed anyway. Private are closed to a sandbox unless its record
	// opens them (Sandbox.OpenPrivate).
	Closed, Private []netip.Prefix
	// Events records egress.denied; nil records nothing.
	Events *events.Log
	Logger *slog.Logger
	// CA signs the certificates shown for the hosts of transforms; nil
	// turns transforms off (their hosts are only filtered).
	CA *CA
	// Secrets gives an owner's secret to the transforms.
	Secrets Secrets
}

// Secrets gives owners' secrets (internal/secrets).
type Secrets interface {
	Value(owner, name string) (string, bool)
}

// Proxy is the egress proxy.
type Proxy struct {
	opts  Options
	dir   atomic.Pointer[Directory]
	log   *slog.Logger
	ln    net.Listener
	addr  netip.AddrPort
	http  *httpSide
	audit *audit
	dns   *lookupCache
	hosts *hostAddrs
	slots chan struct{}
	// relay joins tunnelled connections to their servers; nil where the
	// kernel refused it (goroutines join them then).
	relay *relay
	wg    sync.WaitGroup
	// origDst finds where a connection was going (originalDst; a test
	// connects without the firewall's redirect).
	origDst func(net.Conn) (netip.AddrPort, error)
}

// Listen starts the proxy on host (an address of the host's loopback)
// at a free port. It closes every connection until SetDirectory.
func Listen(host string, opts Options) (*Proxy, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ln, err := (&net.ListenConfig{Control: deferAccept}).Listen(context.Background(), "tcp4", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{opts: opts, log: opts.Logger, ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String()),
		audit: newAudit(opts.Events), dns: newLookupCache(opts.Resolver), hosts: newHostAddrs(), slots: make(chan struct{}, maxConns), origDst: originalDst}
	p.http = newHTTPSide(p)
	if p.relay, err = newRelay(); err != nil {
		p.log.Info("egress proxy: tunnels joined by goroutines", "err", err)
	}
	p.wg.Go(p.serve)
	return p, nil
}

// deferAccept has the kernel hand a connection to accept only once its
// first bytes (a ClientHello, a request's head) are there, or after
// helloTimeout: the proxy wakes once per connection, not once to accept
// and again to read.
func deferAccept(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, int(helloTimeout/time.Second))
	})
	return errors.Join(err, serr)
}

// SetDirectory tells the proxy who its clients are.
func (p *Proxy) SetDirectory(d Directory) { p.dir.Store(&d) }

// Addr is where the proxy listens.
func (p *Proxy) Addr() netip.AddrPort { return p.addr }

// Close stops the proxy; connections in flight are cut.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.http.close()
	if p.relay != nil {
		p.relay.close()
	}
	p.hosts.close()
	p.wg.Wait()
	return err
}

// Recent lists sandbox id's recent decisions, oldest first.
func (p *Proxy) Recent(id string) []Decision { return p.audit.recent(id) }

// Denied is the number of connections and requests refused so far whose
// destination was named as kind (one of DeniedKinds), for the metrics.
func (p *Proxy) Denied(kind string) uint64 { return p.audit.deniedOf(kind) }

// Forget drops what the proxy keeps of sandbox id.
func (p *Proxy) Forget(id string) {
	p.audit.forget(id)
	p.http.upstreams.forget(id)
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Error("egress proxy stopped", "err", err)
			}
			return
		}
		select {
		case p.slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		// The goroutine that accepted the connection goes on with it at
		// once; a new one takes over accepting.
		p.wg.Go(p.serve)
		if !p.handle(c) {
			p.release()
		}
		return
	}
}

// release frees a connection's slot.
func (p *Proxy) release() { <-p.slots }

// conn is a sandbox's connection, with what the proxy knows of it.
type conn struct {
	net.Conn
	r   io.Reader // what was read ahead, then the rest
	sb  Sandbox
	dst netip.AddrPort // where the sandbox was going
	// sni is the name whose TLS the proxy terminated; "" for plain HTTP.
	sni string
}

func (c *conn) Read(b []byte) (int, error) { return c.r.Read(b) }

// handle decides on one redirected connection. It reports whether the
// relay took the connection, with its slot.
func (p *Proxy) handle(nc net.Conn) bool {
	src, err := netip.ParseAddrPort(nc.RemoteAddr().String())
	if err != nil {
		nc.Close()
		return false
	}
	dir := p.dir.Load()
	if dir == nil {
		nc.Close()
		return false
	}
	sb, ok := (*dir).Sandbox(src.Addr().Unmap())
	if !ok {
		nc.Close()
		return false
	}
	dst, err := p.origDst(nc)
	if err != nil {
		p.log.Debug("egress proxy: no original destination", "sandbox", sb.ID, "err", err)
		nc.Close()
		return false
	}
	_ = nc.SetReadDeadline(time.Now().Add(helloTimeout))
	// A ClientHello (or a request's head) usually arrives whole: one read.
	br := bufio.NewReaderSize(nc, firstRead)
	first, err := br.Peek(1)
	if err != nil {
		nc.Close()
		return false
	}
	c := &conn{Conn: nc, r: br, sb: sb, dst: dst}
	if first[0] == 0x16 { // a TLS handshake record
		return p.tunnelTLS(c)
	}
	_ = nc.SetReadDeadline(time.Time{})
	p.http.push(c)
	return false
}

// route decides on a connection of sb to host (a name, an address, or ""
// for none: then dst's address) on dst's port, and returns the addresses
// to connect to and the decision, which the caller records. kind says
// where host came from ("sni", "host"). A refusal is recorded here.
func (p *Proxy) route(sb Sandbox, kind, host string, dst netip.AddrPort) ([]netip.AddrPort, Decision, error) {
	port := dst.Port()
	d := Decision{Kind: kind, Name: host, Port: port}
	refuse := func(rule string) ([]netip.AddrPort, Decision, error) {
		d.Rule = rule
		p.audit.record(sb, d)
		return nil, d, &refusal{d}
	}
	lit, err := netip.ParseAddr(host)
	if host == "" || err == nil {
		if host == "" {
			lit = dst.Addr()
		}
		d.Kind, d.Address = "address", lit.String()
		v := sb.Policy.AdmitAddr(lit, port)
		if !v.Allow {
			return refuse(v.Rule)
		}
		if closed := p.closed(sb, lit); closed != "" {
			return refuse(closed)
		}
		d.Allowed, d.Rule = true, v.Rule
		return []netip.AddrPort{netip.AddrPortFrom(lit, port)}, d, nil
	}
	v := sb.Policy.AdmitName(host, port)
	if !v.Allow && !v.ByAddress {
		return refuse(v.Rule)
	}
	addrs, err := p.dns.lookup(host, sb.Nameservers)
	if err != nil {
		return refuse("unresolvable")
	}
	var out []netip.AddrPort
	for _, a := range addrs {
		if closed := p.closed(sb, a); closed != "" {
			d.Rule = closed
			continue
		}
		if v.ByAddress {
			av := sb.Policy.AdmitAddr(a, port)
			if !av.Allow {
				d.Rule = av.Rule
				continue
			}
			v.Rule = av.Rule
		}
		out = append(out, netip.AddrPortFrom(a, port))
	}
	if len(out) == 0 {
		return refuse(d.Rule)
	}
	d.Allowed, d.Rule, d.Address = true, v.Rule, out[0].Addr().String()
	return out, d, nil
}

// refusal is a connection the policy refused.
type refusal struct{ d Decision }

func (r *refusal) Error() string {
	name := r.d.Name
	if name == "" {
		name = r.d.Address
	}
	return fmt.Sprintf("hutch egress policy refused %s port %d (%s)", name, r.d.Port, r.d.Rule)
}

// closed says why sb may not reach a (a rule name), "" if it may.
func (p *Proxy) closed(sb Sandbox, a netip.Addr) string {
	a = a.Unmap()
	if !a.Is4() || a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "closed address"
	}
	closed := p.opts.Closed
	if !sb.OpenPrivate {
		closed = append(slices.Clip(closed), p.opts.Private...)
	}
	for _, pfx := range closed {
		if pfx.Contains(a) {
			return "closed range " + pfx.String()
		}
	}
	if p.hosts.has(a) {
		return "the host's own address"
	}
	return ""
}

// dial connects to the first of addrs that answers.
func dial(ctx context.Context, addrs []netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp4", a.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// portString is port in decimal.
func portString(port uint16) string { return strconv.Itoa(int(port)) }
