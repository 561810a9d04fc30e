package dnsgate

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// recordingWriter is a dns.ResponseWriter from 127.0.0.1 that keeps what
// was written.
type recordingWriter struct {
	dns.ResponseWriter
	msgs []*dns.Msg
}

func (w *recordingWriter) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
}
func (w *recordingWriter) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}
func (w *recordingWriter) WriteMsg(m *dns.Msg) error { w.msgs = append(w.msgs, m); return nil }

// FuzzServeDNS hands the resolver hostile queries from a sandbox and
// checks: every query gets exactly one answer, with its id; a refused
// name ("blocked.example", in any case) never reaches the upstream and
// is reported denied; only an allowed name's addresses are learned.
func FuzzServeDNS(f *testing.F) {
	var mu sync.Mutex
	var asked []string
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	up := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if len(q.Question) == 1 {
			mu.Lock()
			asked = append(asked, strings.ToLower(q.Question[0].Name))
			mu.Unlock()
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0}, A: net.IPv4(192, 0, 2, 1)})
		}
		_ = w.WriteMsg(m)
	})}
	go up.ActivateAndServe()
	f.Cleanup(func() { _ = up.Shutdown() })
	s, err := Listen("127.0.0.1", Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })

	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"blocked.example.", dns.TypeA}, {"BLOCKED.example.", dns.TypeAAAA}, {"web.", dns.TypeA}, {"api.example.", dns.TypeA}, {"other.example.", dns.TypeTXT}} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, packet []byte) {
		q := new(dns.Msg)
		if q.Unpack(packet) != nil {
			return // the server drops what does not unpack
		}
		sb := &fakeSandbox{upstreams: []string{pc.LocalAddr().String()}}
		s.SetDirectory(fakeDirectory{sb})
		mu.Lock()
		asked = nil
		mu.Unlock()
		w := &recordingWriter{}
		s.ServeDNS(w, q)
		if len(w.msgs) != 1 || w.msgs[0].Id != q.Id {
			t.Fatalf("%d answers to one query (id %d)", len(w.msgs), q.Id)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, name := range asked {
			if name == "blocked.example." {
				t.Fatalf("the refused name reached the upstream")
			}
		}
		for _, name := range sb.denied {
			if name != "blocked.example" {
				t.Errorf("denied %q, which is not refused", name)
			}
		}
		if len(sb.learned) > 0 && (len(q.Question) != 1 || strings.ToLower(strings.TrimSuffix(q.Question[0].Name, ".")) != "api.example") {
			t.Errorf("learned %v for a query that names no allowed name", sb.learned)
		}
	})
}
