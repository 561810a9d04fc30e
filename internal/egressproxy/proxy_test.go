package egressproxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// TestServerName: crypto/tls reads a real client's SNI, and the bytes it
// read are the client's whole first flight, to replay upstream.
func TestServerName(t *testing.T) {
	for _, sni := range []string{"api.example.test", ""} {
		client, server := net.Pipe()
		go func() {
			c := tls.Client(client, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			_ = c.Handshake()
			client.Close()
		}()
		_ = server.SetDeadline(time.Now().Add(10 * time.Second))
		name, hello, err := serverName(&conn{Conn: server, r: server})
		server.Close()
		if err != nil || name != sni || len(hello) < 5 || hello[0] != 0x16 {
			t.Errorf("SNI %q: got %q, %d bytes, %v", sni, name, len(hello), err)
		}
	}
	// Not TLS: an error, no name.
	client, server := net.Pipe()
	go func() { _, _ = client.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); client.Close() }()
	if _, _, err := serverName(&conn{Conn: server, r: server}); err == nil {
		t.Error("plain HTTP read as a ClientHello")
	}
}

// TestAuditBudget: a sandbox's refusals are events up to the window's
// budget, then counted into the next one; every decision is kept, the
// oldest dropped past the bound.
func TestAuditBudget(t *testing.T) {
	var tr trail
	now := time.Now()
	for i := range eventsPerWin {
		if ok, _ := tr.budget(now); !ok {
			t.Fatalf("event %d refused", i)
		}
	}
	if ok, _ := tr.budget(now); ok {
		t.Fatal("past the budget, an event")
	}
	ok, suppressed := tr.budget(now.Add(eventWindow))
	if !ok || suppressed != 1 {
		t.Fatalf("next window: %v, %d suppressed", ok, suppressed)
	}
	a := newAudit((*events.Log)(nil))
	for range keptDecisions + 5 {
		a.record(Sandbox{ID: "s"}, api.EgressDecision{Kind: "host", Name: "x", Allowed: true})
	}
	if got := a.recent("s"); len(got) != keptDecisions {
		t.Errorf("kept %d decisions", len(got))
	}
	if n := a.deniedOf("host"); n != 0 {
		t.Errorf("allowed decisions counted as refusals: %d", n)
	}
	a.forget("s")
	if got := a.recent("s"); len(got) != 0 {
		t.Errorf("forgotten sandbox has %d decisions", len(got))
	}
}

// TestHTTPForms: a sandbox's CONNECT and absolute-form requests are
// refused before goproxy sees them, and a denied Host gets 403 naming the
// rule, all on one kept-alive connection.
func TestHTTPForms(t *testing.T) {
	p := &Proxy{log: slog.New(slog.DiscardHandler), audit: newAudit(nil)}
	p.http = newHTTPSide(p)
	defer p.http.close()
	pol, err := egress.Compile(&api.EgressPolicy{AllowOut: []string{"allowed.test"}, DenyOut: []string{"denied.test"}})
	if err != nil {
		t.Fatal(err)
	}
	client, server := net.Pipe()
	defer client.Close()
	p.http.push(&conn{Conn: server, r: server, sb: Sandbox{ID: "s", Policy: pol}, dst: netip.MustParseAddrPort("192.0.2.1:80")})
	br := bufio.NewReader(client)
	for _, tc := range []struct {
		req  string
		code int
	}{
		{"CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n", 400},
		{"GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n", 403},
		{"GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", 403},
	} {
		_ = client.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := client.Write([]byte(tc.req)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.req, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%q: %d, want %d", tc.req, resp.StatusCode, tc.code)
		}
	}
	got := p.Recent("s")
	if len(got) != 2 || got[0].Rule != "deny_out denied.test" || got[1].Kind != "address" || got[1].Allowed {
		t.Errorf("decisions: %+v", got)
	}
	// Both refusals are counted for the metrics, by kind.
	for kind, want := range map[string]uint64{"host": 1, "address": 1, "sni": 0} {
		if n := p.Denied(kind); n != want {
			t.Errorf("Denied(%q) = %d, want %d", kind, n, want)
		}
	}
}
