package sandbox

// Network sandboxes in the warm pool. A pool of a network shape boots its
// sandboxes as a create with network: true, no env and no policy would:
// their own namespace, veth and addresses, an empty egress chain and sets,
// a gateway forwarding gateway_ports and the package indexes. Until a
// create claims one it is not in the manager's list, so hutch's resolver
// answers it nothing, and no code but the pool's warm-up `true` runs in
// it. The claim then gives it the create's policy (none included) through
// applyEgress, the path of sandbox::network::update, which rewrites its
// chain and empties its sets before the sandbox is handed out; should that
// fail, the sandbox is discarded and the create boots its own. A create
// whose env names a loopback port that a boot would forward and the pool
// sandbox does not boots its own too: forwarding is set up at boot.

import (
	"context"
	"errors"
	"slices"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// errGatewayChanged is the claim failure of a pool sandbox whose gateway
// forwards a port that has become the daemon's own since it booted.
var errGatewayChanged = errors.New("the pool sandbox's gateway forwards a port the daemon now protects")

// networkFits reports whether a pool sandbox with a network can serve a
// create with env: the runtime enforces egress policies, and the pool's
// gateway forwards what a boot for env would.
func (c warmCore) networkFits(env []string) bool {
	if c.m.net == nil {
		return false
	}
	forward, _ := c.m.net.Gateway("", "", nil)
	return gatewayFits(c.m, forward, env)
}

// gatewayFits reports whether a gateway forwarding forwarded is the one a
// boot for env would set up: none of forwarded is the daemon's own port
// (named after the sandbox booted), and every loopback port env names
// that a boot would forward is. The pool has a network service.
func gatewayFits(m *Manager, forwarded []uint16, env []string) bool {
	for _, p := range forwarded {
		if m.net.Protected(p) {
			return false
		}
	}
	for _, p := range egress.LoopbackPorts(env) {
		if m.cfg.Forwardable(int(p)) && !m.net.Protected(p) && !slices.Contains(forwarded, p) {
			return false
		}
	}
	return true
}

// claimNetwork gives a claimed pool sandbox with a network its create's
// env and egress policy (nil: none): env's loopback URLs of forwarded
// ports point at its gateway, the others are reported unforwarded, and
// the policy is in force before it returns. sb is not registered yet.
func (c warmCore) claimNetwork(ctx context.Context, sb *sandbox, policy *api.EgressPolicy) error {
	m, rec := c.m, &sb.rec
	if !gatewayFits(m, rec.forwarded, rec.Env) {
		return errGatewayChanged
	}
	pol, err := egress.Compile(policy)
	if err != nil {
		return err
	}
	if err := m.applyEgress(ctx, sb, pol); err != nil {
		return err
	}
	rec.unforwarded = nil
	for _, p := range egress.SortedSet(egress.LoopbackPorts(rec.Env)) {
		if !slices.Contains(rec.forwarded, p) {
			rec.unforwarded = append(rec.unforwarded, p)
		}
	}
	if len(rec.unforwarded) > 0 {
		m.log.Info("not forwarding ports named in a sandbox's env", "sandbox", rec.ID, "owner", rec.Owner, "ports", rec.unforwarded)
	}
	rec.Env = m.net.UseGateway(rec.ID, rec.Env, rec.forwarded)
	return nil
}
