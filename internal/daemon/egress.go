package daemon

import (
	"context"
	"net/netip"

	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/netplumb"
)

// startEgressProxy starts hutch's egress proxy (issue 37), which decides
// by name on the connections of sandboxes whose policy has name rules; it
// resolves names as their resolver does and reaches nothing the firewall
// closes to sandboxes.
func (d *daemon) startEgressProxy() error {
	var pool netip.Prefix
	if d.cfg.NetworkPool != "" {
		p, err := netip.ParsePrefix(d.cfg.NetworkPool)
		if err != nil {
			return err
		}
		pool = p
	}
	p, err := egressproxy.Listen("127.0.0.1", egressproxy.Options{
		Resolver: d.resolver,
		Closed:   netplumb.ClosedRanges(pool, d.cfg.BlockPrivateNetworks),
		Events:   d.evlog,
		Logger:   d.log,
	})
	if err != nil {
		return err
	}
	d.proxy = p
	d.held.Push("stopping the egress proxy", func(context.Context) error { return p.Close() })
	return nil
}
