package netplumb

// issue 35: a cluster node's networked Pod sandbox outlives its daemon
// with its namespace and veth; the restarted daemon's Network takes its
// lease over (Adopt) and writes its firewall rules again, since those
// name the daemon's resolver and egress proxy, whose ports change with
// the process.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Adopt takes over the network an earlier process's Setup made for
// sb.ID, which its sandbox still uses: the lease is read back from the
// host veth (its gateway address) and the pinned namespace, and the
// sandbox's firewall rules are written anew for sb (its ports, egress
// and private ranges; the addresses its resolver had learned are
// dropped). On error it changes nothing but those rules.
func (n *Network) Adopt(ctx context.Context, sb Sandbox) (*Lease, error) {
	if !validID.MatchString(sb.ID) {
		return nil, fmt.Errorf("invalid sandbox id %q for a network", sb.ID)
	}
	l := &Lease{ID: sb.ID, HostIf: n.hostIf(sb.ID), NetnsPath: sb.NetnsPath, Ports: sortedPorts(sb.Ports), OpenPrivate: sb.OpenPrivate}
	gw, err := n.gatewayOf(l.HostIf, sb.ID)
	if err != nil {
		return nil, err
	}
	l.Subnet = netip.PrefixFrom(gw, blockBits).Masked()
	if l.Gateway, l.Addr = subnetAddrs(l.Subnet); l.Gateway != gw {
		return nil, fmt.Errorf("veth %s's address %s is not a sandbox subnet's gateway", l.HostIf, gw)
	}
	ns, err := netns.GetFromPath(sb.NetnsPath)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	ns.Close()
	n.mu.Lock()
	if _, dup := n.leases[sb.ID]; dup {
		n.mu.Unlock()
		return nil, fmt.Errorf("sandbox %s already has a network", sb.ID)
	}
	n.leases[sb.ID] = nil // reserved, as by Setup
	n.busy++
	n.mu.Unlock()
	err = n.ensureBase(ctx)
	if err == nil {
		var s script
		s.add("add chain inet %s %s { %s ; }", n.nft.table, sandboxChain(sb.ID), sandboxNote(sb.ID))
		s.add("flush chain inet %s %s", n.nft.table, sandboxChain(sb.ID))
		err = n.nft.apply(ctx, s.String()+n.nft.addScript(l, n.opts.DNS, sb.Egress))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.busy--
	if err != nil {
		delete(n.leases, sb.ID)
		return nil, fmt.Errorf("writing the firewall rules of an adopted network: %w", err)
	}
	n.leases[sb.ID] = l
	return l, nil
}

// gatewayOf is the pool address of hutch's veth hostIf of sandbox id.
func (n *Network) gatewayOf(hostIf, id string) (netip.Addr, error) {
	link, err := netlink.LinkByName(hostIf)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("finding veth %s: %w", hostIf, err)
	}
	if a := link.Attrs().Alias; a != n.alias(id) {
		return netip.Addr{}, fmt.Errorf("link %s is not hutch's veth of sandbox %s (alias %q)", hostIf, id, a)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing the addresses of veth %s: %w", hostIf, err)
	}
	for _, a := range addrs {
		if gw, ok := netip.AddrFromSlice(a.IP.To4()); ok && n.opts.Pool.Contains(gw) {
			return gw, nil
		}
	}
	return netip.Addr{}, errors.New("veth " + hostIf + " has no address of the network pool")
}
