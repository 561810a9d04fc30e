package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// TestOpsReloadEgressDefaults (issue 41: 4): a reload applies
// block_private_networks and sandbox_nameservers to the sandboxes made
// after it, and each sandbox keeps those it was made with: one made
// before a reload that opens the private ranges still cannot reach a
// private address (a veth target on this host) and still asks its own
// resolver, also once woken from a hibernation; one made after reaches
// the address and asks the new one.
func TestOpsReloadEgressDefaults(t *testing.T) {
	target := privateTarget(t, "private")
	const name = "which.test"
	before := testResolver(t, map[string]string{name: "192.0.2.1"})
	after := testResolver(t, map[string]string{name: "192.0.2.2"})
	d := startDaemon(t, baseConfig("sandbox_nameservers: [\""+before+"\"]\n"))
	resolve := func(id string) string {
		t.Helper()
		r := d.exec(id, "python3", "-c", `import socket; print(socket.gethostbyname("`+name+`"))`)
		if !r.Success {
			t.Fatalf("resolving %s in sandbox %s: %+v", name, id, r)
		}
		return strings.TrimSpace(r.Stdout)
	}
	check := func(when, id, wantFetch, wantAddr string) {
		t.Helper()
		if got := d.fetch(id, target); !strings.HasPrefix(got[0], wantFetch) {
			t.Errorf("%s: fetching %s: %q, want %q", when, target, got, wantFetch)
		}
		if got := resolve(id); got != wantAddr {
			t.Errorf("%s: %s resolves to %s, want %s (its resolver's answer)", when, name, got, wantAddr)
		}
	}
	old := d.create(api.CreateRequest{Image: "python", Network: true})
	check("made before the reload", old, "ERR", "192.0.2.1")

	cfg, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(string(cfg), before, after, 1) + "block_private_networks: false\n"
	if err := os.WriteFile(d.cfgPath, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := d.c.AdminReload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"block_private_networks", "sandbox_nameservers"} {
		if !slices.Contains(res.Applied, key) || slices.Contains(res.RestartNeeded, key) {
			t.Errorf("reload: %+v, want %s applied", res, key)
		}
	}
	made := d.create(api.CreateRequest{Image: "python", Network: true})
	check("made after the reload", made, "private", "192.0.2.2")
	check("made before, after the reload", old, "ERR", "192.0.2.1")
	// A hibernation and its wake (a new network) keep them.
	if _, err := d.c.Pause(ctx, old, api.PauseHibernate); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Resume(ctx, old); err != nil {
		t.Fatal(err)
	}
	check("made before, woken after the reload", old, "ERR", "192.0.2.1")
}
