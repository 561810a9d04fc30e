package egressproxy

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
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
	a.forget("s")
	if got := a.recent("s"); len(got) != 0 {
		t.Errorf("forgotten sandbox has %d decisions", len(got))
	}
}
