package microvm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// A sandbox with Network gets the same network namespace, veth, /30,
// gateway forwards and firewall as a gVisor one (netplumb). In that
// namespace the veth's sandbox end (eth0) loses its address and joins a
// bridge with a TAP device, whose descriptor QEMU is given: the guest's
// virtio-net interface takes the sandbox's address and routes through the
// gateway, as eth0 did. QEMU itself stays in the host's namespace.

var (
	_ runtime.NetworkInfo = (*instance)(nil)
	_ runtime.Firewall    = (*Runtime)(nil)
)

// Names in a sandbox's directory and network namespace.
const (
	netnsName  = "netns"
	bridgeName = "br0"
	tapName    = "tap0"
	vethName   = "eth0" // netplumb's sandbox end
)

// newNetwork is the runtime's netplumb, over opts' pool and resolver.
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

// guestNet is what the guest is told of its network.
type guestNet struct {
	addr    netip.Prefix // its address and the /30's length
	gateway netip.Addr
	dns     netip.Addr // its nameserver, if any
	mac     net.HardwareAddr
}

// setupNetwork plumbs spec's network into dir/netns and returns the lease,
// what the guest is told, and the TAP device's descriptor for QEMU.
func (r *Runtime) setupNetwork(ctx context.Context, spec runtime.Spec, dir string) (*netplumb.Lease, guestNet, *os.File, error) {
	lease, err := r.net.Setup(ctx, netplumb.Sandbox{
		ID:        spec.ID,
		NetnsPath: filepath.Join(dir, netnsName),
		Ports:     spec.GatewayPorts,
		Egress:    spec.Egress,
	})
	if err != nil {
		return nil, guestNet{}, nil, fmt.Errorf("setting up the network: %w", err)
	}
	g := guestNet{
		addr:    netip.PrefixFrom(lease.Addr, lease.Subnet.Bits()),
		gateway: lease.Gateway,
		dns:     nameserver(lease.ResolvConf),
		mac:     macOf(spec.ID),
	}
	ns, err := netns.GetFromPath(lease.NetnsPath)
	if err != nil {
		return lease, g, nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer ns.Close()
	tap, err := bridgeTap(ns, lease)
	if err != nil {
		return lease, g, nil, err
	}
	return lease, g, tap, nil
}

// bridgeTap moves the sandbox's address off the veth's end in ns, makes
// a bridge of it and a TAP device, and returns the TAP device's
// descriptor. The device is not persistent: it goes when QEMU, the last
// holder of the descriptor, exits.
func bridgeTap(ns netns.NsHandle, lease *netplumb.Lease) (*os.File, error) {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("opening netlink in the sandbox's namespace: %w", err)
	}
	defer h.Close()
	eth, err := h.LinkByName(vethName)
	if err != nil {
		return nil, fmt.Errorf("finding the sandbox's %s: %w", vethName, err)
	}
	addrs, err := h.AddrList(eth, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing %s's addresses: %w", vethName, err)
	}
	for _, a := range addrs {
		if err := h.AddrDel(eth, &a); err != nil {
			return nil, fmt.Errorf("moving the sandbox's address %s to the guest: %w", lease.Addr, err)
		}
	}
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}); err != nil {
		return nil, fmt.Errorf("creating the bridge: %w", err)
	}
	br, err := h.LinkByName(bridgeName)
	if err != nil {
		return nil, fmt.Errorf("finding the bridge: %w", err)
	}
	// TUNSETIFF creates the device in the calling thread's namespace.
	tapFile, err := inNamespace(ns, func() (*os.File, error) { return tunOpen(tapName) })
	if err != nil {
		return nil, err
	}
	tap, err := h.LinkByName(tapName)
	if err != nil {
		tapFile.Close()
		return nil, fmt.Errorf("finding the TAP device: %w", err)
	}
	for _, l := range []netlink.Link{eth, tap} {
		if err := h.LinkSetMaster(l, br); err != nil {
			tapFile.Close()
			return nil, fmt.Errorf("bridging %s: %w", l.Attrs().Name, err)
		}
	}
	for _, l := range []netlink.Link{tap, br} {
		if err := h.LinkSetUp(l); err != nil {
			tapFile.Close()
			return nil, fmt.Errorf("bringing up %s: %w", l.Attrs().Name, err)
		}
	}
	return tapFile, nil
}

// inNamespace runs f on a thread that has entered namespace ns, then
// leaves it again.
func inNamespace(ns netns.NsHandle, f func() (*os.File, error)) (*os.File, error) {
	goruntime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("opening this thread's network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		goruntime.UnlockOSThread()
		return nil, fmt.Errorf("entering the sandbox's network namespace: %w", err)
	}
	file, ferr := f()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked, and so is dropped when this goroutine
		// ends, rather than serve others in the wrong namespace.
		if file != nil {
			file.Close()
		}
		return nil, fmt.Errorf("leaving the sandbox's network namespace: %w", err)
	}
	goruntime.UnlockOSThread()
	return file, ferr
}

// tunOpen creates the TAP device name, attached to a new descriptor of
// /dev/net/tun.
func tunOpen(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_ONE_QUEUE)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attaching to %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tap"), nil
}

// nameserver is the first nameserver of a resolv.conf, or the zero Addr.
func nameserver(resolvConf []byte) netip.Addr {
	sc := bufio.NewScanner(bytes.NewReader(resolvConf))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil && a.Is4() {
				return a
			}
		}
	}
	return netip.Addr{}
}

// macOf is a locally administered unicast MAC address derived from a
// sandbox id.
func macOf(id string) net.HardwareAddr {
	h := sha256.Sum256([]byte(id))
	return net.HardwareAddr{0x02, h[0], h[1], h[2], h[3], h[4]}
}

// teardownNetwork removes what setupNetwork made (the namespace, with the
// bridge and TAP device in it, and netplumb's host side).
func (r *Runtime) teardownNetwork(ctx context.Context, id string) error {
	if r.net == nil {
		return nil
	}
	return r.net.Teardown(ctx, id)
}

// releaseNetwork removes the firewall table once no sandbox is left.
func (r *Runtime) releaseNetwork() error {
	if r.net == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.net.Release(ctx)
}

// Gateway is the address at which the sandbox reaches the host's
// forwarded ports; zero without a network.
func (i *instance) Gateway() netip.Addr { return i.gateway }

// Addr is the sandbox's own address; zero without a network.
func (i *instance) Addr() netip.Addr { return i.addr }

// SetEgress replaces sandbox id's outbound policy.
func (r *Runtime) SetEgress(ctx context.Context, id string, e netplumb.Egress) error {
	return r.net.SetEgress(ctx, id, e)
}

// Learn lets sandbox id reach addrs on port for ttl (names its policy
// allows).
func (r *Runtime) Learn(ctx context.Context, id string, addrs []netip.Addr, port uint16, ttl time.Duration) error {
	return r.net.Learn(ctx, id, addrs, port, ttl)
}

// SetPeers replaces the pairs of sandboxes that reach each other.
func (r *Runtime) SetPeers(ctx context.Context, pairs [][2]string) error {
	return r.net.SetPeers(ctx, pairs)
}

// Denied counts, per sandbox, the packets its policy refused.
func (r *Runtime) Denied(ctx context.Context) (map[string]uint64, error) {
	return r.net.Denied(ctx)
}
