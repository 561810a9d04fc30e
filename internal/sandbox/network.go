package sandbox

// Networking. The network of a sandbox created with network: true is
// Options.Network's (networksvc.Net, over the daemon's network service):
// the core asks it to attach the network before a boot or a wake (the
// runtime spec carries the attachment), to detach it once the runtime
// instance is destroyed (a teardown, a hibernation, a failed start) and to
// reconcile at start. A create's egress policy is checked here
// (internal/sandbox/egress), passed through and recorded.

import (
	"context"
	"maps"
	"slices"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/adoptsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// SandboxNetwork is the networking of the sandboxes created with
// network: true (networksvc.Net), as the core asks it.
type SandboxNetwork interface {
	// Gateway decides which host loopback ports sandbox id of owner, with
	// env, reaches at its gateway (forward), and which ports its env
	// names that are not forwarded (refused); both sorted.
	Gateway(id, owner string, env []string) (forward, refused []uint16)
	// Protected reports whether port is one of the daemon's own, which
	// no gateway forwards.
	Protected(port uint16) bool
	// Attach makes sandbox id's network before its runtime starts it: its
	// gateway forwards ports, its egress policy is pol (nil: none). On
	// error (S200, S302) it leaves nothing behind.
	Attach(ctx context.Context, id string, ports []uint16, pol *egress.Policy) (*runtime.NetworkAttachment, error)
	// UseGateway is env with its loopback URLs of ports pointed at
	// sandbox id's gateway.
	UseGateway(id string, env []string, ports []uint16) []string
	// HostURL is u, a URL on the host's loopback, as sandbox id reaches
	// it; unchanged without a gateway.
	HostURL(id, u string) string
	// SetEgress makes pol (nil: none) the egress policy of sandbox id's
	// network (S302, S500).
	SetEgress(ctx context.Context, id string, pol *egress.Policy) error
	// Readopt and Detach: an adopted sandbox's network (issue 35); a teardown.
	adoptsvc.Network
	// Renewed gives the firewall sandbox id's network peers again, once
	// its network was made anew (a wake).
	Renewed(ctx context.Context, id string)
	// Reconcile tears down what an earlier daemon left of its sandboxes'
	// networks.
	Reconcile(ctx context.Context) error
}

// NoNetwork is the refusal of network: true, egress policies and sandbox
// networks by a daemon without a network service (S302).
func NoNetwork() error {
	return errdefs.New(errdefs.CodeUnsupported, "this daemon has no network service: network: true, egress policies and sandbox networks are unavailable")
}

// applyEgress makes pol (nil: none) sb's egress policy and records it.
// sandbox::network::update (Handle.SetEgress) and a claim from the warm
// pool (poolsvc) both take this path.
func (m *Manager) applyEgress(ctx context.Context, sb *sandbox, pol *egress.Policy) error {
	if m.net == nil {
		return NoNetwork()
	}
	sb.egressMu.Lock()
	defer sb.egressMu.Unlock()
	if err := m.net.SetEgress(ctx, sb.rec.ID, pol); err != nil {
		return err
	}
	sb.mu.Lock()
	sb.rec.Egress = pol.Source()
	sb.mu.Unlock()
	return nil
}

// checkNetwork checks a create's network and egress policy: both need a
// network service (net; every runtime joins its networks), and a policy
// implies a network.
func checkNetwork(req *api.CreateRequest, net SandboxNetwork) error {
	if req.Egress.Empty() {
		req.Egress = nil
		if req.Network && net == nil {
			return NoNetwork()
		}
		return nil
	}
	if err := egress.Check(req.Egress); err != nil {
		return err
	}
	if net == nil {
		return NoNetwork()
	}
	req.Network = true
	return nil
}

// Running is the owner of sandbox id while it is listed and has not
// stopped (a pool sandbox is not listed until a create claims it): the
// sandboxes' networking reports its refusals and answers its resolver.
func (m *Manager) Running(id string) (owner string, ok bool) {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok || sb.isStopped() {
		return "", false
	}
	return sb.rec.Owner, true
}

// LiveOwners is Running's owner of every sandbox, by id (issue 43: 5).
func (m *Manager) LiveOwners() map[string]string {
	m.mu.Lock()
	ids := slices.Collect(maps.Keys(m.sandboxes))
	m.mu.Unlock()
	out := map[string]string{}
	for _, id := range ids {
		if owner, ok := m.Running(id); ok {
			out[id] = owner
		}
	}
	return out
}
