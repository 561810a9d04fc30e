package egressproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
)

// Dial connects to host (a name or an address) on port for sb as the
// proxy connects for sb's own connections (issue 39: a template build's
// ADD of a URL): sb's policy decides (a name by its name rules, else by
// the CIDR rules on each of its addresses), names resolve with the
// sandboxes' resolver, and nothing the firewall closes to sandboxes is
// dialled. A refusal is an egress.denied event of sb.ID and a *Refusal;
// no trail of decisions is kept (sb is no sandbox to list it under).
func (p *Proxy) Dial(ctx context.Context, sb Sandbox, host string, port uint16) (net.Conn, error) {
	if host == "" {
		return nil, errors.New("no host to connect to")
	}
	defer p.audit.forget(sb.ID)
	addrs, _, err := p.route(sb, "host", host, netip.AddrPortFrom(netip.IPv4Unspecified(), port))
	if err != nil {
		return nil, err
	}
	return dial(ctx, addrs)
}

// Refusal is a connection the egress policy, or the ranges closed to
// sandboxes, refused.
type Refusal = refusal
