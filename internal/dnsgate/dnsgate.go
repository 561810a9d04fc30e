// Package dnsgate is hutch's resolver for sandboxes: every sandbox with a
// network has its gateway's port 53 led here (netplumb), and nowhere else
// to ask. It answers the names of a sandbox's network peers itself,
// refuses names its egress policy does not admit, forwards the rest to the
// host's own nameservers, and hands the addresses it answered for an
// allowed name to the firewall for their TTL, before the answer reaches
// the sandbox. Who asks is told by the query's source address; each
// sandbox's questions go to its own upstream nameservers (Client).
package dnsgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Directory finds the sandbox that has a network address.
type Directory interface {
	Client(src netip.Addr) (Client, bool)
}

// Client is one sandbox, as its resolver sees it.
type Client interface {
	// Peer returns the addresses of name among the sandbox's network
	// peers; none when name is not one of them.
	Peer(name string) []netip.Addr
	// Check decides on name (lowercase, without the final dot).
	Check(name string) Verdict
	// Learn lets the sandbox reach addrs on ports (0: every port) for ttl.
	Learn(ctx context.Context, addrs []netip.Addr, ports []uint16, ttl time.Duration) error
	// Denied records that name was refused.
	Denied(name string)
	// Nameservers are the upstream nameservers (host:port) the sandbox's
	// questions go to; none means the host's.
	Nameservers() []string
}

// Verdict is a sandbox's policy on one name.
type Verdict struct {
	// Refuse answers the name as nonexistent.
	Refuse bool
	// Ports, when not empty, are the ports the name's addresses are
	// allowed on (0: every port): they are learned.
	Ports []uint16
}

// Limits of the resolver.
const (
	// maxInFlight bounds the queries being forwarded at once, and
	// maxPerClient those of one sandbox: a flood gets SERVFAIL.
	maxInFlight  = 256
	maxPerClient = 32
	// minLearnTTL and maxLearnTTL bound how long learned addresses stay
	// allowed; connections made meanwhile outlive it.
	minLearnTTL = 30 * time.Second
	maxLearnTTL = 24 * time.Hour
	// peerTTL is the TTL of the answers for peers.
	peerTTL = 5
	// upstreamTimeout bounds one question to one upstream nameserver.
	upstreamTimeout = 2 * time.Second
)

// Options configure the resolver.
type Options struct {
	// ResolvConf is the host's resolver configuration, read again every
	// 10 s; "" means /etc/resolv.conf.
	ResolvConf string
	Logger     *slog.Logger
}

// Server is the resolver.
type Server struct {
	log       *slog.Logger
	addr      netip.AddrPort
	resolv    string // the host's resolver configuration
	udp, tcp  *dns.Server
	inFlight  chan struct{}
	mu        sync.Mutex
	dir       Directory          // guarded by mu
	perClient map[netip.Addr]int // guarded by mu
	upstreams []string           // guarded by mu: host:port, from resolv
	readAt    time.Time          // guarded by mu: when upstreams were read
}

// Listen starts the resolver on host (an address of the host's loopback)
// at a free port, UDP and TCP alike. It answers REFUSED until
// SetDirectory.
func Listen(host string, opts Options) (*Server, error) {
	if opts.ResolvConf == "" {
		opts.ResolvConf = "/etc/resolv.conf"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{log: opts.Logger, resolv: opts.ResolvConf, inFlight: make(chan struct{}, maxInFlight), perClient: map[netip.Addr]int{}}
	var err error
	for range 10 { // the UDP port may be taken for TCP
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp4", net.JoinHostPort(host, "0")); err != nil {
			return nil, fmt.Errorf("dns resolver: %w", err)
		}
		var l net.Listener
		if l, err = net.Listen("tcp4", pc.LocalAddr().String()); err != nil {
			pc.Close()
			continue
		}
		s.addr = netip.MustParseAddrPort(pc.LocalAddr().String())
		s.udp = &dns.Server{PacketConn: pc, Handler: s}
		s.tcp = &dns.Server{Listener: l, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
		go s.serve(s.udp)
		go s.serve(s.tcp)
		return s, nil
	}
	return nil, fmt.Errorf("dns resolver: no port free for both UDP and TCP: %w", err)
}

func (s *Server) serve(srv *dns.Server) {
	if err := srv.ActivateAndServe(); err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Error("dns resolver stopped", "err", err)
	}
}

// Addr is where the resolver listens (UDP and TCP).
func (s *Server) Addr() netip.AddrPort { return s.addr }

// SetDirectory tells the resolver who its clients are.
func (s *Server) SetDirectory(d Directory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dir = d
}

// Close stops the resolver.
func (s *Server) Close() error {
	return errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	src := remoteAddr(w)
	s.mu.Lock()
	dir := s.dir
	s.mu.Unlock()
	var c Client
	ok := dir != nil && src.IsValid()
	if ok {
		c, ok = dir.Client(src)
	}
	if !ok || len(q.Question) != 1 || q.Opcode != dns.OpcodeQuery {
		reply(w, q, dns.RcodeRefused)
		return
	}
	question := q.Question[0]
	name := strings.TrimSuffix(strings.ToLower(question.Name), ".")
	if addrs := c.Peer(name); len(addrs) > 0 {
		s.answerPeer(w, q, addrs)
		return
	}
	v := c.Check(name)
	if v.Refuse {
		c.Denied(name)
		reply(w, q, dns.RcodeNameError)
		return
	}
	if !s.enter(src) {
		reply(w, q, dns.RcodeServerFailure)
		return
	}
	defer s.leave(src)
	ans, err := s.forward(q, w.LocalAddr().Network(), c.Nameservers())
	if err != nil {
		s.log.Debug("dns upstream failed", "name", name, "err", err)
		reply(w, q, dns.RcodeServerFailure)
		return
	}
	if len(v.Ports) > 0 {
		if err := s.learn(c, ans, v.Ports); err != nil {
			s.log.Warn("allowing a name's addresses", "name", name, "err", err)
			reply(w, q, dns.RcodeServerFailure)
			return
		}
	}
	ans.Id = q.Id
	_ = w.WriteMsg(ans)
}

// Lookup resolves name's IPv4 addresses through upstreams (a sandbox's
// Nameservers: none means the host's), as that sandbox would: hutch's
// egress proxy connects to the name a connection carries, not to the
// address the sandbox picked. ttl is the answer's least A record TTL, for
// the caller's cache.
func (s *Server) Lookup(name string, upstreams []string) (addrs []netip.Addr, ttl time.Duration, err error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	q.RecursionDesired = true
	ans, err := s.forward(q, "udp", upstreams)
	if err == nil && ans.Truncated {
		ans, err = s.forward(q, "tcp", upstreams)
	}
	if err != nil {
		return nil, 0, err
	}
	if ans.Rcode != dns.RcodeSuccess {
		return nil, 0, fmt.Errorf("%s: %s", name, dns.RcodeToString[ans.Rcode])
	}
	addrs, ttl = aRecords(ans)
	if len(addrs) == 0 {
		return nil, 0, fmt.Errorf("%s has no IPv4 address", name)
	}
	return addrs, ttl, nil
}

// answerPeer answers q with addrs (A records; no other type).
func (s *Server) answerPeer(w dns.ResponseWriter, q *dns.Msg, addrs []netip.Addr) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if q.Question[0].Qtype == dns.TypeA {
		for _, a := range addrs {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: peerTTL},
				A:   a.AsSlice(),
			})
		}
	}
	_ = w.WriteMsg(m)
}

// learn hands the A records of ans to the firewall for their TTL.
func (s *Server) learn(c Client, ans *dns.Msg, ports []uint16) error {
	addrs, ttl := aRecords(ans)
	if len(addrs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Learn(ctx, addrs, ports, max(ttl, minLearnTTL))
}

// aRecords returns the addresses of ans's A records and their least TTL
// (maxLearnTTL without any).
func aRecords(ans *dns.Msg) ([]netip.Addr, time.Duration) {
	var addrs []netip.Addr
	ttl := maxLearnTTL
	for _, rr := range ans.Answer {
		if a, ok := rr.(*dns.A); ok {
			if addr, ok := netip.AddrFromSlice(a.A.To4()); ok {
				addrs = append(addrs, addr)
				ttl = min(ttl, time.Duration(a.Hdr.Ttl)*time.Second)
			}
		}
	}
	return addrs, ttl
}

// enter takes a forwarding slot for src; false when none is free.
func (s *Server) enter(src netip.Addr) bool {
	select {
	case s.inFlight <- struct{}{}:
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perClient[src] >= maxPerClient {
		<-s.inFlight
		return false
	}
	s.perClient[src]++
	return true
}

// leave gives src's slot back.
func (s *Server) leave(src netip.Addr) {
	s.mu.Lock()
	if s.perClient[src]--; s.perClient[src] <= 0 {
		delete(s.perClient, src)
	}
	s.mu.Unlock()
	<-s.inFlight
}

// forward asks servers (none: the host's nameservers), in order, over
// network ("udp" or "tcp", as the sandbox asked: a truncated UDP answer
// makes it ask again over TCP).
func (s *Server) forward(q *dns.Msg, network string, servers []string) (*dns.Msg, error) {
	if len(servers) == 0 {
		servers = s.hostNameservers()
	}
	if len(servers) == 0 {
		return nil, errors.New("the host has no nameserver")
	}
	c := &dns.Client{Net: network, Timeout: upstreamTimeout}
	var errs []error
	for _, srv := range servers {
		ans, _, err := c.Exchange(q.Copy(), srv)
		if err == nil {
			return ans, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// hostNameservers returns the host's nameservers, read again every 10 s.
func (s *Server) hostNameservers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.readAt) < 10*time.Second {
		return s.upstreams
	}
	s.readAt = time.Now()
	b, err := os.ReadFile(s.resolv)
	if err != nil {
		s.upstreams = nil
		return nil
	}
	s.upstreams = parseNameservers(string(b))
	return s.upstreams
}

// parseNameservers returns the nameserver lines of a resolv.conf as
// host:53 addresses.
func parseNameservers(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, netip.AddrPortFrom(a.WithZone(""), 53).String())
			}
		}
	}
	return out
}

// reply answers q with rcode and nothing else.
func reply(w dns.ResponseWriter, q *dns.Msg, rcode int) {
	m := new(dns.Msg)
	m.SetRcode(q, rcode)
	_ = w.WriteMsg(m)
}

// remoteAddr is the query's source address.
func remoteAddr(w dns.ResponseWriter) netip.Addr {
	if ap, err := netip.ParseAddrPort(w.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
