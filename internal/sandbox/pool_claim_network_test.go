package sandbox

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fakeNetwork is the sandboxes' networking: it records the policies
// (their firewall rules) it is given and fails SetEgress on demand: a
// fake, because the real one (networksvc over netsvc) needs root and
// nftables, and its failures cannot be caused at will (the integration
// tests run the real one). Its attachments name no namespace; the
// in-process runtime joins none. Its gateway forwards nothing.
type fakeNetwork struct {
	mu sync.Mutex
	// attached are the policies sandboxes were attached with, set those
	// SetEgress was given, by sandbox id; failing makes SetEgress fail;
	// guarded by mu.
	attached map[string]netplumb.Egress
	set      map[string][]netplumb.Egress
	failing  bool
	// protected is the daemon's own port (0: none).
	protected uint16
}

var _ SandboxNetwork = (*fakeNetwork)(nil)

func (f *fakeNetwork) Attach(_ context.Context, id string, _ []uint16, pol *egress.Policy) (*runtime.NetworkAttachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached[id] = pol.Firewall()
	return f.attachmentLocked(id), nil
}

func (f *fakeNetwork) Gateway(string, string, []string) (forward, refused []uint16) { return nil, nil }
func (f *fakeNetwork) Protected(port uint16) bool                                   { return port != 0 && port == f.protected }
func (f *fakeNetwork) UseGateway(_ string, env []string, _ []uint16) []string       { return env }
func (f *fakeNetwork) HostURL(id, u string) string                                  { return u + "#via-" + id }
func (f *fakeNetwork) Renewed(context.Context, string)                              {}

func (f *fakeNetwork) attachmentLocked(id string) *runtime.NetworkAttachment {
	if _, ok := f.attached[id]; !ok {
		return nil
	}
	return &runtime.NetworkAttachment{Addr: netip.MustParseAddr("10.99.0.2"), Gateway: netip.MustParseAddr("10.99.0.1"), Bits: 30}
}

func (f *fakeNetwork) Attachment(id string) *runtime.NetworkAttachment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attachmentLocked(id)
}

// egressOf is the policy sandbox id was attached with, and whether it was.
func (f *fakeNetwork) egressOf(id string) (netplumb.Egress, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.attached[id]
	return e, ok
}

// Readopt takes over the network of sandbox id as if an earlier daemon
// attached it; failing makes it fail.
func (f *fakeNetwork) Readopt(_ context.Context, id string, pol *egress.Policy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return errors.New("no network to adopt")
	}
	f.attached[id] = pol.Firewall()
	return nil
}

func (f *fakeNetwork) Detach(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.attached, id)
}

func (f *fakeNetwork) Reconcile(context.Context) error { return nil }

func (f *fakeNetwork) SetEgress(_ context.Context, id string, pol *egress.Policy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return errors.New("nft: injected failure")
	}
	f.set[id] = append(f.set[id], pol.Firewall())
	return nil
}

// TestWarmPoolNetworkClaim: a network create gives the network shape a
// pool; a claim from it puts the create's policy in force before the
// create answers; when that fails, the pool sandbox is destroyed and the
// create boots its own with its policy in its spec.
func TestWarmPoolNetworkClaim(t *testing.T) {
	fw := &fakeNetwork{attached: map[string]netplumb.Egress{}, set: map[string][]netplumb.Egress{}}
	m, rt, _ := inprocessWith(t, func(c *config.Config) { c.WarmPoolAuto = true }, func(o *Options) { o.Network = fw })
	var mu sync.Mutex
	specs := map[string]runtime.Spec{}
	rt.BeforeStart(func(_ context.Context, spec runtime.Spec) error {
		mu.Lock()
		specs[spec.ID] = spec
		mu.Unlock()
		return nil
	})
	pooledNetwork := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var ids []string
		for id, sp := range specs {
			e, _ := fw.egressOf(id)
			if sp.Network != nil && !e.Restricted && len(e.Deny) == 0 && rt.Instance(id) != nil {
				ids = append(ids, id)
			}
		}
		return ids
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready == 1 }, "the base python sandbox is ready")
	create(t, m, api.CreateRequest{Image: "python", Network: true})
	if st := poolOf(m, "python"); st.Claims[warmpool.Misfit] != 1 {
		t.Fatalf("claims = %v, want the first network create booted", st.Claims)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready >= 2 }, "the network pool fills")

	policy := &api.EgressPolicy{AllowOut: []string{"10.1.2.0/24:443"}}
	pooled := pooledNetwork()
	id := create(t, m, api.CreateRequest{Image: "python", Egress: policy})
	if !slices.Contains(pooled, id) {
		t.Fatalf("create with a policy %s is not one of the pooled %v", id, pooled)
	}
	fw.mu.Lock()
	got := fw.set[id]
	fw.mu.Unlock()
	if len(got) != 1 || !got[0].Restricted || len(got[0].Allow) != 1 {
		t.Errorf("policies set on the claimed sandbox: %+v, want the create's", got)
	}
	info, err := m.Get(context.Background(), api.GetRequest{SandboxID: id})
	if err != nil || !info.Network || info.Egress == nil || info.Egress.AllowOut[0] != policy.AllowOut[0] {
		t.Errorf("claimed sandbox: %+v, %v", info, err)
	}

	// Fail closed.
	testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready >= 2 }, "the network pool refills")
	fw.mu.Lock()
	fw.failing = true
	fw.mu.Unlock()
	pooled = pooledNetwork()
	id = create(t, m, api.CreateRequest{Image: "python", Egress: policy})
	if slices.Contains(pooled, id) {
		t.Fatalf("create %s was handed pool sandbox whose policy failed", id)
	}
	mu.Lock()
	spec := specs[id]
	mu.Unlock()
	if e, _ := fw.egressOf(id); spec.Network == nil || !e.Restricted {
		t.Errorf("cold boot after a failed claim: spec network %+v, attached with egress %+v; want the create's policy", spec.Network, e)
	}
	if st := poolOf(m, "python"); st.Claims[warmpool.Hit] != 1 || st.Claims[warmpool.Misfit] != 2 {
		t.Errorf("claims = %v, want 1 hit and 2 misfits", st.Claims)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, p := range pooled {
			if inst := rt.Instance(p); inst != nil {
				select {
				case <-inst.Done():
					return true
				default:
				}
			}
		}
		return false
	}, "the pool sandbox whose policy failed is destroyed")
}
