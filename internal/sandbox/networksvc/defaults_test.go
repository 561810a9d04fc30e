package networksvc

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/egressproxy"
)

// TestDefaultsPerSandbox (issue 41: 4): a network keeps the egress
// defaults in force when it was made, in the firewall, the proxy's record
// and its resolver's upstreams, across a hibernation; a reload changes
// those of the sandboxes made after it, and a warm pool sandbox made
// before is not claimed.
func TestDefaultsPerSandbox(t *testing.T) {
	ctx := context.Background()
	fw := &fakeNet{}
	n := NewNet(NetOptions{Service: fw, Config: config.Config{BlockPrivateNetworks: true, SandboxNameservers: []string{"192.0.2.53"}}})
	n.Bind(live{owners: map[string]string{"old": "alice", "new": "alice"}, done: make(chan struct{})})
	old, err := n.Attach(ctx, "old", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Attach(ctx, "pooled", nil, nil); err != nil {
		t.Fatal(err)
	}
	n.SetDefaults(config.Config{SandboxNameservers: []string{"198.51.100.53:5353"}})
	made, err := n.Attach(ctx, "new", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fw.open["old"] || !fw.open["new"] {
		t.Errorf("private ranges opened: %v, want only the sandbox made after the reload", fw.open)
	}
	for _, tc := range []struct {
		addr netip.Addr
		open bool
		ns   string
	}{{old.Addr, false, "192.0.2.53:53"}, {made.Addr, true, "198.51.100.53:5353"}} {
		c, ok := n.Client(tc.addr)
		if !ok || !slices.Equal(c.Nameservers(), []string{tc.ns}) {
			t.Errorf("resolver upstreams of %s = %v, want [%s]", tc.addr, c, tc.ns)
		}
		sb, ok := n.Sandbox(tc.addr)
		if !ok || sb.OpenPrivate != tc.open || !slices.Equal(sb.Nameservers, []string{tc.ns}) {
			t.Errorf("proxy record of %s = %+v, want open %v, upstreams [%s]", tc.addr, sb, tc.open, tc.ns)
		}
	}
	if err := n.SetEgress(ctx, "old", nil); err != nil {
		t.Errorf("a listed sandbox's policy change refused: %v", err)
	}
	if err := n.SetEgress(ctx, "pooled", nil); err == nil {
		t.Error("a pool sandbox made before the reload was claimed")
	}
	// A hibernated sandbox (detached, still listed) wakes with its own
	// defaults; a stopped one's are forgotten at the next Attach.
	n.Detach("old")
	woken, err := n.Attach(ctx, "old", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sb, _ := n.Sandbox(woken.Addr); fw.open["old"] || sb.OpenPrivate || !slices.Equal(sb.Nameservers, []string{"192.0.2.53:53"}) {
		t.Errorf("woken: private ranges opened %v, proxy record %+v; want those it was made with", fw.open["old"], sb)
	}
	n.Detach("pooled")
	if _, err := n.Attach(ctx, "later", nil, nil); err != nil {
		t.Fatal(err)
	}
	if d, ok := n.made["pooled"]; ok {
		t.Errorf("the defaults of a detached, unlisted sandbox kept: %+v", d)
	}
	if got := n.WithDefaults(egressproxy.Sandbox{ID: "template-build:x"}); !got.OpenPrivate || !slices.Equal(got.Nameservers, []string{"198.51.100.53:5353"}) {
		t.Errorf("a build's connections decided with %+v, want the defaults in force", got)
	}
}
