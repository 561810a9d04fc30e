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

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
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
	// Detach tears sandbox id's network down; it is idempotent and logs
	// its failures.
	Detach(id string)
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

// networkService is the sandboxes' networking; S302 without one.
func (m *Manager) networkService() (SandboxNetwork, error) {
	if m.net == nil {
		return nil, NoNetwork()
	}
	return m.net, nil
}

// attachNetwork makes the network of rec's sandbox, whose gateway
// forwards ports, before its runtime starts it; nil without network: true.
func (m *Manager) attachNetwork(ctx context.Context, rec *record, ports []uint16) (*runtime.NetworkAttachment, error) {
	if !rec.Network {
		return nil, nil
	}
	svc, err := m.networkService()
	if err != nil {
		return nil, err
	}
	return svc.Attach(ctx, rec.ID, ports, egress.MustCompile(rec.Egress))
}

// detachNetwork tears down the network of rec's sandbox, once its runtime
// instance is destroyed.
func (m *Manager) detachNetwork(rec *record) {
	if rec.Network && m.net != nil {
		m.net.Detach(rec.ID)
	}
}

// isProtected reports whether port is one of the daemon's own.
func (m *Manager) isProtected(port uint16) bool { return m.net != nil && m.net.Protected(port) }

// gatewayPorts decides which host loopback ports sandbox rec reaches at
// its gateway, and which its env names that are not forwarded
// (SandboxNetwork.Gateway); none without network: true.
func (m *Manager) gatewayPorts(rec *record) (forward, refused []uint16) {
	if !rec.Network || m.net == nil {
		return nil, nil
	}
	return m.net.Gateway(rec.ID, rec.Owner, rec.Env)
}

// useGateway points the loopback URLs of rec's env whose ports are
// forwarded at its sandbox's gateway, once the sandbox has a network.
func (m *Manager) useGateway(rec *record, ports []uint16) {
	if rec.Network && m.net != nil {
		rec.Env = m.net.UseGateway(rec.ID, rec.Env, ports)
	}
}

// applyEgress makes pol (nil: none) sb's egress policy and records it.
// sandbox::network::update (Handle.SetEgress) and a claim from the warm
// pool (pool_network.go) both take this path.
func (m *Manager) applyEgress(ctx context.Context, sb *sandbox, pol *egress.Policy) error {
	svc, err := m.networkService()
	if err != nil {
		return err
	}
	sb.egressMu.Lock()
	defer sb.egressMu.Unlock()
	if err := svc.SetEgress(ctx, sb.rec.ID, pol); err != nil {
		return err
	}
	sb.mu.Lock()
	sb.rec.Egress = pol.Source()
	sb.mu.Unlock()
	return nil
}

// checkEgress checks a create's network and egress policy: both need the
// network service (every runtime joins its networks), and a policy
// implies a network.
func (m *Manager) checkEgress(req *api.CreateRequest) error {
	if req.Egress.Empty() {
		req.Egress = nil
		if req.Network {
			_, err := m.networkService()
			return err
		}
		return nil
	}
	if err := egress.Check(req.Egress); err != nil {
		return err
	}
	if _, err := m.networkService(); err != nil {
		return err
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
