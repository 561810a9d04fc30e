package egressproxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// TestUpstreamsKeepAlive: a sandbox's requests to one host reuse one
// upstream connection; another sandbox, or the same one under a changed
// policy or once forgotten, never gets it.
func TestUpstreamsKeepAlive(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())

	h := newHTTPSide(&Proxy{log: slog.New(slog.DiscardHandler), audit: newAudit(nil)})
	defer h.close()
	u := h.upstreams
	pol := func() *egress.Policy {
		p, err := egress.Compile(&api.EgressPolicy{AllowOut: []string{"a.test"}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	get := func(sb Sandbox) {
		t.Helper()
		// As decide hands it on: the admitted addresses in its context,
		// the sandbox's Connection: close not passed up.
		ctx := context.WithValue(context.Background(), routeKey{}, []netip.AddrPort{addr})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test:"+portString(addr.Port())+"/", nil)
		resp, err := u.of(sb).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a := Sandbox{ID: "a", Policy: pol()}
	for range 3 {
		get(a)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 requests of one sandbox: %d connections, want 1", n)
	}
	get(Sandbox{ID: "b", Policy: a.Policy})
	if n := conns.Load(); n != 2 {
		t.Fatalf("another sandbox: %d connections, want 2", n)
	}
	a.Policy = pol() // a policy update
	get(a)
	if n := conns.Load(); n != 3 {
		t.Fatalf("a changed policy: %d connections, want 3", n)
	}
	u.forget("a")
	get(a)
	if n := conns.Load(); n != 4 {
		t.Fatalf("a forgotten sandbox: %d connections, want 4", n)
	}
}
