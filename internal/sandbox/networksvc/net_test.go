package networksvc

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

func TestGatewayPorts(t *testing.T) {
	env := []string{"A=http://localhost:8080/", "B=http://127.0.0.1:3111/", "C=ws://localhost:49134", "D=http://127.0.0.1:8080/x", "E=plain", "F=postgres://localhost:5432/db"}
	for _, tc := range []struct {
		name             string
		tokens           map[string]string
		forwardable      []int
		want, wantRefuse []uint16
	}{
		{"one user: named and configured ports, never the daemon's", nil, nil, []uint16{5432, 8080, 9000}, []uint16{3111, 49134}},
		{"one user with forwardable_ports: only those", nil, []int{5432}, []uint16{5432, 9000}, []uint16{3111, 8080, 49134}},
		{"owners: only forwardable_ports and gateway_ports", map[string]string{"alice": "a"}, []int{5432, 3111}, []uint16{5432, 9000}, []uint16{3111, 8080, 49134}},
		{"owners without forwardable_ports: gateway_ports", map[string]string{"alice": "a"}, nil, []uint16{9000}, []uint16{3111, 5432, 8080, 49134}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.GatewayPorts = []int{9000}
			cfg.APITokens, cfg.ForwardablePorts = tc.tokens, tc.forwardable
			n := NewNet(NetOptions{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			n.ProtectPorts(3111, 49134)
			got, refused := n.Gateway("x", "", env)
			if !slices.Equal(got, tc.want) || !slices.Equal(refused, tc.wantRefuse) {
				t.Fatalf("Gateway = %v, refused %v; want %v, refused %v", got, refused, tc.want, tc.wantRefuse)
			}
		})
	}
}

// live is a fake core: the running sandboxes and their owners.
type live struct {
	owners map[string]string
	done   chan struct{}
}

func (l live) Running(id string) (string, bool) {
	o, ok := l.owners[id]
	return o, ok
}

func (l live) Done() <-chan struct{} { return l.done }

// TestResolverDirectory: the resolver finds a running sandbox by its
// address and decides by the policy in force; it answers nothing for a
// sandbox the core does not list (a pool sandbox) or once detached.
func TestResolverDirectory(t *testing.T) {
	ctx := context.Background()
	fw := &fakeNet{}
	n := NewNet(NetOptions{Service: fw})
	core := live{owners: map[string]string{"a": "alice"}, done: make(chan struct{})}
	n.Bind(core)
	pol, err := egress.Compile(&api.EgressPolicy{AllowOut: []string{"pypi.org"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.Attach(ctx, "a", nil, pol)
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := n.Attach(ctx, "pooled", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Client(pooled.Addr); ok {
		t.Error("the resolver answered a sandbox the core does not list")
	}
	c, ok := n.Client(a.Addr)
	if !ok {
		t.Fatal("the resolver did not find a running sandbox by its address")
	}
	if v := c.Check("pypi.org"); v.Refuse {
		t.Errorf("an allowed name was refused: %+v", v)
	}
	if v := c.Check("example.com"); !v.Refuse {
		t.Errorf("a name outside allow_out was answered: %+v", v)
	}
	if err := n.SetEgress(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if v := c.Check("example.com"); v.Refuse {
		t.Errorf("a lifted policy still refuses: %+v", v)
	}
	n.Detach("a")
	if _, ok := n.Client(a.Addr); ok {
		t.Error("the resolver answered a detached sandbox")
	}
}

// TestDeniedNamesAreRecorded: a sandbox's refused names are egress.denied
// events of the sandbox and its owner, coalesced (events.Denials).
func TestDeniedNamesAreRecorded(t *testing.T) {
	log, err := events.Open(filepath.Join(t.TempDir(), "events.db"), events.Options{MaxCount: 1000, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	fw := &fakeNet{}
	n := NewNet(NetOptions{Service: fw, Events: log})
	done := make(chan struct{})
	n.Bind(live{owners: map[string]string{"a": "alice"}, done: done})
	t.Cleanup(func() { close(done); n.Wait() })
	nw, err := n.Attach(context.Background(), "a", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := n.Client(nw.Addr)
	if !ok {
		t.Fatal("no client")
	}
	for range 100 {
		c.Denied("blocked.test")
	}
	n.names.Flush()
	list, _ := log.List(events.Filter{AllOwners: true, SandboxID: "a", Type: api.EventEgressDenied}, 1000)
	if len(list) != 2 || string(list[0].Data) != `{"count":1,"name":"blocked.test"}` || string(list[1].Data) != `{"count":99,"name":"blocked.test"}` || list[0].Owner != "alice" {
		t.Errorf("events %+v", list)
	}
}

// TestWithoutService: without the daemon's network service nothing is
// attached (S302) and a teardown or a reconcile has nothing to do.
func TestWithoutService(t *testing.T) {
	n := NewNet(NetOptions{})
	_, err := n.Attach(context.Background(), "a", nil, nil)
	wantCode(t, err, errdefs.CodeUnsupported)
	n.Detach("a")
	if err := n.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u := n.HostURL("a", "http://localhost:3141/simple"); u != "http://localhost:3141/simple" {
		t.Errorf("HostURL without a network = %q", u)
	}
}

// TestHostURL: a URL on the host's loopback is reached through the
// sandbox's gateway; any other URL, and every URL of a sandbox without a
// network, is unchanged.
func TestHostURL(t *testing.T) {
	fw := &fakeNet{}
	n := NewNet(NetOptions{Service: fw})
	if _, err := n.Attach(context.Background(), "a", nil, nil); err != nil {
		t.Fatal(err)
	}
	local := "http://127.0.0.1:3141/simple"
	if got := n.HostURL("a", local); got != "http://10.0.0.254:3141/simple" {
		t.Errorf("HostURL(%q) = %q, want it through the gateway", local, got)
	}
	if got := n.HostURL("none", local); got != local {
		t.Errorf("HostURL of a sandbox without a network = %q, want it unchanged", got)
	}
	for _, u := range []string{"", "https://pypi.org/simple"} {
		if got := n.HostURL("a", u); got != u {
			t.Errorf("HostURL(%q) = %q, want it unchanged", u, got)
		}
	}
}

// TestReadopt: a network adopted with its sandbox (issue 35) is found
// again by hutch's resolver under the sandbox's policy, keeps the private
// ranges it was made with, and one that cannot be adopted is S200.
func TestReadopt(t *testing.T) {
	ctx := context.Background()
	fw := &fakeNet{}
	// What an earlier daemon attached, with block_private_networks off.
	first, err := fw.Attach(ctx, "pod", nil, netplumb.Egress{}, true)
	if err != nil {
		t.Fatal(err)
	}
	n := NewNet(NetOptions{Service: fw})
	pol, err := egress.Compile(&api.EgressPolicy{AllowOut: []string{"pypi.org"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Readopt(ctx, "pod", pol); err != nil {
		t.Fatal(err)
	}
	n.Bind(live{owners: map[string]string{"pod": "alice"}, done: make(chan struct{})})
	if got := n.Addr("pod"); got != first.Addr {
		t.Errorf("the adopted network's address is %v, was %v", got, first.Addr)
	}
	c, ok := n.Client(first.Addr)
	if !ok {
		t.Fatal("the resolver did not find the adopted sandbox by its address")
	}
	if v := c.Check("example.com"); !v.Refuse {
		t.Errorf("a name outside the adopted sandbox's allow_out was answered: %+v", v)
	}
	if !n.madeWith("pod").OpenPrivate {
		t.Error("the adopted network lost its open private ranges")
	}
	wantCode(t, n.Readopt(ctx, "gone", nil), errdefs.CodeBootFailed)
}
