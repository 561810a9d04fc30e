package poolsvc

// Network sandboxes in the warm pool. A pool of a network shape boots its
// sandboxes as a create with network: true, no env and no policy would:
// their own namespace, veth and addresses, an empty egress chain and sets,
// a gateway forwarding gateway_ports and the package indexes. Until a
// create claims one it is not in the manager's list, so hutch's resolver
// answers it nothing, and no code but the pool's warm-up `true` runs in
// it. The claim then gives it the create's policy (none included) through
// Core.SetEgress, the path of sandbox::network::update, which rewrites its
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
func (s Service[S]) networkFits(env []string) bool {
	if s.Net == nil {
		return false
	}
	forward, _ := s.Net.Gateway("", "", nil)
	return s.gatewayFits(forward, env)
}

// gatewayFits reports whether a gateway forwarding forwarded is the one a
// boot for env would set up: none of forwarded is the daemon's own port
// (named after the sandbox booted), and every loopback port env names
// that a boot would forward is. s has a network service.
func (s Service[S]) gatewayFits(forwarded []uint16, env []string) bool {
	for _, p := range forwarded {
		if s.Net.Protected(p) {
			return false
		}
	}
	for _, p := range egress.LoopbackPorts(env) {
		if s.Cfg.Forwardable(int(p)) && !s.Net.Protected(p) && !slices.Contains(forwarded, p) {
			return false
		}
	}
	return true
}

// claimNetwork gives a claimed pool sandbox with a network, info, its
// create's egress policy (nil: none) and c.Env: its loopback URLs of
// forwarded ports point at its gateway, the others are reported
// unforwarded, and the policy is in force before it returns.
func (s Service[S]) claimNetwork(ctx context.Context, sb S, info Info, policy *api.EgressPolicy, c *Claimed) error {
	if !s.gatewayFits(info.Forwarded, c.Env) {
		return errGatewayChanged
	}
	if err := s.Core.SetEgress(ctx, sb, policy); err != nil {
		return err
	}
	c.Unforwarded = nil
	for _, p := range egress.SortedSet(egress.LoopbackPorts(c.Env)) {
		if !slices.Contains(info.Forwarded, p) {
			c.Unforwarded = append(c.Unforwarded, p)
		}
	}
	if len(c.Unforwarded) > 0 {
		s.Log.Info("not forwarding ports named in a sandbox's env", "sandbox", info.ID, "owner", c.Owner, "ports", c.Unforwarded)
	}
	c.Env = s.Net.UseGateway(info.ID, c.Env, info.Forwarded)
	return nil
}
