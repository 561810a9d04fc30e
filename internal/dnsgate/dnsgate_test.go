package dnsgate

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeSandbox is a Client with a peer "web", the name "blocked.example"
// refused and "api.example" allowed on port 443.
type fakeSandbox struct {
	mu      sync.Mutex
	learned []string
	denied  []string
	fail    bool
	// upstreams are its nameservers.
	upstreams []string
}

func (f *fakeSandbox) Nameservers() []string { return f.upstreams }

func (f *fakeSandbox) Peer(name string) []netip.Addr {
	if name == "web" {
		return []netip.Addr{netip.MustParseAddr("10.200.0.6")}
	}
	return nil
}

func (f *fakeSandbox) Check(name string) Verdict {
	switch name {
	case "blocked.example":
		return Verdict{Refuse: true}
	case "api.example":
		return Verdict{Ports: []uint16{443}}
	}
	return Verdict{}
}

func (f *fakeSandbox) Learn(_ context.Context, addrs []netip.Addr, ports []uint16, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return context.DeadlineExceeded
	}
	for _, a := range addrs {
		f.learned = append(f.learned, a.String()+" "+ttl.String())
	}
	return nil
}

func (f *fakeSandbox) Denied(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.denied = append(f.denied, name)
}

type fakeDirectory struct{ sb *fakeSandbox }

func (d fakeDirectory) Client(src netip.Addr) (Client, bool) {
	if src == netip.MustParseAddr("127.0.0.1") {
		return d.sb, true
	}
	return nil, false
}

// upstream serves every A question with 192.0.2.1 and 192.0.2.2, TTL 5.
func upstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP(a)})
		}
		_ = w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestResolver(t *testing.T) {
	up := upstream(t)
	s, err := Listen("127.0.0.1", Options{ResolvConf: filepath.Join(t.TempDir(), "none"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sb := &fakeSandbox{upstreams: []string{up}}
	ask := func(name string, qtype uint16, network string) *dns.Msg {
		t.Helper()
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(name), qtype)
		c := &dns.Client{Net: network, Timeout: 3 * time.Second}
		ans, _, err := c.Exchange(q, s.Addr().String())
		if err != nil {
			t.Fatalf("asking %s over %s: %v", name, network, err)
		}
		return ans
	}
	if ans := ask("anything.example", dns.TypeA, "udp"); ans.Rcode != dns.RcodeRefused {
		t.Errorf("before SetDirectory: rcode %s, want REFUSED", dns.RcodeToString[ans.Rcode])
	}
	s.SetDirectory(fakeDirectory{sb})

	ans := ask("WEB", dns.TypeA, "udp")
	if len(ans.Answer) != 1 || ans.Answer[0].(*dns.A).A.String() != "10.200.0.6" {
		t.Errorf("peer: %v", ans.Answer)
	}
	if ans := ask("web", dns.TypeAAAA, "tcp"); ans.Rcode != dns.RcodeSuccess || len(ans.Answer) != 0 {
		t.Errorf("peer AAAA: %v", ans)
	}
	if ans := ask("blocked.example", dns.TypeA, "udp"); ans.Rcode != dns.RcodeNameError {
		t.Errorf("refused name: rcode %s, want NXDOMAIN", dns.RcodeToString[ans.Rcode])
	}
	if ans := ask("open.example", dns.TypeA, "udp"); len(ans.Answer) != 2 {
		t.Errorf("forwarded: %v", ans)
	}
	if len(sb.learned) != 0 {
		t.Errorf("learned %v for a name without ports", sb.learned)
	}
	if ans := ask("api.example", dns.TypeA, "udp"); len(ans.Answer) != 2 {
		t.Errorf("allowed: %v", ans)
	}
	if want := []string{"192.0.2.1 30s", "192.0.2.2 30s"}; !slices.Equal(sb.learned, want) {
		t.Errorf("learned %v, want %v (the TTL raised to the floor)", sb.learned, want)
	}
	if !slices.Equal(sb.denied, []string{"blocked.example"}) {
		t.Errorf("denied %v", sb.denied)
	}
	sb.fail = true
	if ans := ask("api.example", dns.TypeA, "udp"); ans.Rcode != dns.RcodeServerFailure || len(ans.Answer) != 0 {
		t.Errorf("an answer the firewall could not allow was given: %v", ans)
	}
	// A lookup goes to the upstreams it names; without any, to the
	// host's (here none).
	if addrs, _, err := s.Lookup("open.example", []string{up}); err != nil || len(addrs) != 2 {
		t.Errorf("Lookup with upstreams = %v, %v", addrs, err)
	}
	if _, _, err := s.Lookup("open.example", nil); err == nil {
		t.Error("Lookup without upstreams nor host nameservers succeeded")
	}
}

func TestHostNameservers(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1", Options{ResolvConf: conf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.hostNameservers(); !slices.Equal(got, []string{"192.0.2.53:53"}) {
		t.Errorf("nameservers = %v", got)
	}
}

func TestParseNameservers(t *testing.T) {
	got := parseNameservers("# x\nnameserver 10.255.255.53\nnameserver ::1\nnameserver bogus\nsearch a\n")
	if want := []string{"10.255.255.53:53", "[::1]:53"}; !slices.Equal(got, want) {
		t.Errorf("parseNameservers = %v, want %v", got, want)
	}
}
