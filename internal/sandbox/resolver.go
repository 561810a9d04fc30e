package sandbox

// hutch's resolver (internal/dnsgate) asks the core about the sandbox at
// an address: its egress policy decides on names, its peers on its
// sandbox networks (networksvc, through Networks) are answered, and the
// addresses of allowed names are learned by its firewall.

import (
	"context"
	"net/netip"
	"time"

	"github.com/hutch-dev/hutch/internal/dnsgate"
)

// Resolver is the directory of hutch's resolver: the running sandboxes
// with a network, by address.
func (m *Manager) Resolver() dnsgate.Directory { return resolverDirectory{m} }

type resolverDirectory struct{ m *Manager }

// Client finds the running sandbox whose address is src.
func (d resolverDirectory) Client(src netip.Addr) (dnsgate.Client, bool) {
	d.m.mu.Lock()
	sbs := make([]*sandbox, 0, len(d.m.sandboxes))
	for _, sb := range d.m.sandboxes {
		if sb.rec.Network {
			sbs = append(sbs, sb)
		}
	}
	d.m.mu.Unlock()
	for _, sb := range sbs {
		if !sb.isStopped() && d.m.sandboxAddr(sb) == src {
			return resolverClient{d.m, sb}, true
		}
	}
	return nil, false
}

// resolverClient is one sandbox, for the resolver.
type resolverClient struct {
	m  *Manager
	sb *sandbox
}

func (c resolverClient) Peer(name string) []netip.Addr {
	if n := c.m.networks(); n != nil {
		return n.Peers(c.sb.rec.ID, name)
	}
	return nil
}

func (c resolverClient) Check(name string) dnsgate.Verdict { return c.sb.egress.Load().check(name) }

func (c resolverClient) Learn(ctx context.Context, addrs []netip.Addr, ports []uint16, ttl time.Duration) error {
	fw, err := c.m.networkService()
	if err != nil {
		return err
	}
	for _, p := range ports {
		if err := fw.Learn(ctx, c.sb.rec.ID, addrs, p, ttl); err != nil {
			return err
		}
	}
	return nil
}

func (c resolverClient) Denied(name string) { c.m.deniedName(c.sb, name) }
