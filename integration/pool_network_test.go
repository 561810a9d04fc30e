package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// waitPoolAtLeast waits until image's pool holds at least want sandboxes.
func (d *daemon) waitPoolAtLeast(image string, want float64) {
	d.t.Helper()
	var got float64
	if testutil.Poll(5*time.Minute, func() bool { got = d.poolReady(image); return got >= want }) {
		return
	}
	d.t.Fatalf("warm pool holds %v %s sandboxes, want at least %v", got, image, want)
}

// TestWarmPoolNetwork: with the automatic pool, a network create gives the
// network shape a pool; the next network creates are served from it, each
// with its own policy in force (allowed names and addresses reached, the
// others refused, refusals recorded for it) and none with another's;
// shutdown leaves no namespace, veth or nftables object behind.
func TestWarmPoolNetwork(t *testing.T) {
	tg := newEgressTargets(t)
	allowed, other, otherIP := tg.allowed, tg.other, tg.otherIP
	allowedByName, otherByName := tg.allowedByName, tg.otherByName
	d := startDaemon(t, autoPoolConfig(tg.config))

	// At rest the pool holds the base sandbox only, without a network.
	d.waitPoolReady("python", 1)
	seen := runscSandboxIDs(d.dataDir)
	first := d.create(api.CreateRequest{Image: "python", Network: true})
	d.wantClaims("python", 0, 0, 1)
	if slices.Contains(seen, first) {
		t.Errorf("the first network create %s took the base sandbox %v", first, seen)
	}

	claim := func(req api.CreateRequest) string {
		t.Helper()
		d.waitPoolAtLeast("python", 2) // the base and a network sandbox
		pooled := runscSandboxIDs(d.dataDir)
		seen = append(seen, pooled...)
		id := d.create(req)
		if !slices.Contains(pooled, id) {
			t.Fatalf("network create %s is not one of the pool's %v", id, pooled)
		}
		return id
	}
	restricted := claim(api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{AllowOut: []string{"allowed.test"}}})
	d.wantClaims("python", 1, 0, 1)
	got := d.fetch(restricted, allowedByName, otherByName, other)
	if got[0] != "allowed" || !strings.Contains(got[1], "Name or service not known") || !strings.HasPrefix(got[2], "ERR") {
		t.Fatalf("pooled, allow_out [allowed.test]: fetched %q; want allowed, a name error, a refusal", got)
	}
	if names := d.eventsOf(restricted, api.EventEgressDenied); len(names) == 0 || names[0]["name"] != "other.test" {
		t.Errorf("egress.denied events of the pooled sandbox: %v", names)
	}
	// The refused connection is counted for the sandbox that made it.
	if !testutil.Poll(60*time.Second, func() bool { return hasCount(d.eventsOf(restricted, api.EventEgressDenied)) }) {
		t.Fatalf("no counted egress.denied event: %v", d.eventsOf(restricted, api.EventEgressDenied))
	}

	denied := claim(api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{DenyOut: []string{otherIP}}})
	if got := d.fetch(denied, allowed, other); got[0] != "allowed" || !strings.HasPrefix(got[1], "ERR") {
		t.Fatalf("pooled, deny_out [%s]: fetched %q; want allowed, a refusal", otherIP, got)
	}

	open := claim(api.CreateRequest{Image: "python", Network: true})
	d.wantClaims("python", 3, 0, 1)
	if got := d.fetch(open, allowedByName, other); got[0] != "allowed" || got[1] != "other" {
		t.Fatalf("pooled, network: true: fetched %q; want both reached", got)
	}
	info, err := d.c.Get(t.Context(), open)
	if err != nil || !info.Network || info.Egress != nil {
		t.Errorf("pooled network: true sandbox: %+v, %v; want a network and no policy", info, err)
	}

	seen = append(seen, runscSandboxIDs(d.dataDir)...)
	d.terminate()
	assertNoLeftovers(t, d.dataDir, seen...)
}

// TestWarmPoolNetworkDiscard: pool sandboxes with a network that a full
// daemon discards to make room for creates leave no namespace, veth,
// nftables object, process or mount behind while the daemon runs on.
func TestWarmPoolNetworkDiscard(t *testing.T) {
	d := startDaemon(t, autoPoolConfig("max_concurrent_sandboxes: 3\n"))
	d.waitPoolReady("python", 1)
	base := runscSandboxIDs(d.dataDir)
	first := d.create(api.CreateRequest{Image: "python", Network: true})
	d.waitPoolAtLeast("python", 2) // all the room left: the base and a network sandbox
	var pooled []string
	for _, id := range runscSandboxIDs(d.dataDir) {
		if id != first && !slices.Contains(base, id) {
			pooled = append(pooled, id)
		}
	}
	if len(pooled) == 0 {
		t.Fatalf("no pool sandbox with a network among %v", runscSandboxIDs(d.dataDir))
	}
	// Two creates of another shape boot, each discarding a pool sandbox.
	for range 2 {
		d.create(api.CreateRequest{Image: "python", MemoryMB: 1024})
	}
	if got := d.poolReady("python"); got != 0 {
		t.Errorf("a full daemon's pool holds %v sandboxes, want 0", got)
	}
	assertNoLeftovers(t, "", pooled...)
}
