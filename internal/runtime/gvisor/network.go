package gvisor

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Networking. A sandbox without Network runs with runsc --network=none:
// gVisor's netstack has loopback only. With Network, netplumb pins a fresh
// network namespace at <bundle>/netns holding the sandbox end of a veth
// (eth0, with its address and default route); the OCI spec names that
// namespace and runsc --network=sandbox makes the Sentry's netstack take
// over the interfaces it finds there. The sandbox's /etc/resolv.conf is a
// read-only bind mount of <bundle>/resolv.conf. Teardown removes the veth
// and firewall rules before the bundle's mounts (the netns among them).

var _ runtime.NetworkInfo = (*instance)(nil)

const (
	netnsName      = "netns"
	resolvConfName = "resolv.conf"
)

// newNetwork builds the runtime's network plumbing; nothing on the host
// changes until a sandbox asks for a network.
func newNetwork(opts runtime.Options, stateDir string) (*netplumb.Network, error) {
	var pool netip.Prefix
	if opts.NetworkPool != "" {
		p, err := netip.ParsePrefix(opts.NetworkPool)
		if err != nil {
			return nil, fmt.Errorf("network pool: %w", err)
		}
		pool = p
	}
	var dns netip.AddrPort
	if opts.DNS != "" {
		var err error
		if dns, err = netip.ParseAddrPort(opts.DNS); err != nil {
			return nil, fmt.Errorf("sandbox resolver: %w", err)
		}
	}
	return netplumb.New(netplumb.Options{Pool: pool, Owner: stateDir, BlockPrivateNetworks: opts.BlockPrivateNetworks, DNS: dns})
}

// setupNetwork gives sandbox spec.ID its network when it asks for one,
// with bundle directory dir, and returns the lease (nil without Network).
// Teardown undoes it.
func (r *Runtime) setupNetwork(ctx context.Context, spec runtime.Spec, dir string) (*netplumb.Lease, error) {
	if !spec.Network {
		return nil, nil
	}
	lease, err := r.net.Setup(ctx, netplumb.Sandbox{
		ID:        spec.ID,
		NetnsPath: filepath.Join(dir, netnsName),
		Ports:     spec.GatewayPorts,
		Egress:    spec.Egress,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the network: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, resolvConfName), lease.ResolvConf, 0o644); err != nil {
		return nil, fmt.Errorf("writing resolv.conf: %w", err)
	}
	return lease, nil
}

// withNetwork points the OCI spec of a sandbox with bundle dir at its
// lease's namespace and mounts its resolv.conf over the image's; without a
// lease it changes nothing.
func withNetwork(s *specs.Spec, lease *netplumb.Lease, dir string) {
	if lease == nil {
		return
	}
	for i, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			s.Linux.Namespaces[i].Path = lease.NetnsPath
		}
	}
	// runsc cannot create a mount point in the read-only image: an image
	// without a regular /etc/resolv.conf keeps what it has.
	if fi, err := os.Lstat(filepath.Join(dir, "rootfs", "etc", "resolv.conf")); err != nil || !fi.Mode().IsRegular() {
		return
	}
	s.Mounts = append(s.Mounts, specs.Mount{
		Destination: "/etc/resolv.conf",
		Type:        "bind",
		Source:      filepath.Join(dir, resolvConfName),
		Options:     []string{"bind", "ro", "nosuid", "nodev", "noexec"},
	})
}

// networkFlag is runsc's --network for a sandbox.
func networkFlag(spec runtime.Spec) string {
	if spec.Network {
		return "--network=sandbox"
	}
	return "--network=none"
}

// teardownNetwork removes sandbox id's network, if it has one.
func (r *Runtime) teardownNetwork(ctx context.Context, id string) error {
	return r.net.Teardown(ctx, id)
}

// networkIDs lists the sandboxes with network leftovers on the host.
func (r *Runtime) networkIDs(ctx context.Context) ([]string, error) {
	return r.net.IDs(ctx)
}

// releaseNetwork removes the firewall table once no sandbox has a network.
func (r *Runtime) releaseNetwork() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.net.Release(ctx)
}

// Gateway is the sandbox's gateway address; the zero Addr without Network.
func (i *instance) Gateway() netip.Addr { return i.gateway }

// Addr is the sandbox's own address; the zero Addr without Network.
func (i *instance) Addr() netip.Addr { return i.addr }

var _ runtime.Firewall = (*Runtime)(nil)

// SetEgress replaces sandbox id's egress policy.
func (r *Runtime) SetEgress(ctx context.Context, id string, e netplumb.Egress) error {
	return r.net.SetEgress(ctx, id, e)
}

// Learn lets sandbox id reach addrs on port for ttl.
func (r *Runtime) Learn(ctx context.Context, id string, addrs []netip.Addr, port uint16, ttl time.Duration) error {
	return r.net.Learn(ctx, id, addrs, port, ttl)
}

// SetPeers replaces the pairs of sandboxes that reach each other.
func (r *Runtime) SetPeers(ctx context.Context, pairs [][2]string) error {
	return r.net.SetPeers(ctx, pairs)
}

// Denied counts the packets each sandbox's egress policy rejected.
func (r *Runtime) Denied(ctx context.Context) (map[string]uint64, error) {
	return r.net.Denied(ctx)
}
