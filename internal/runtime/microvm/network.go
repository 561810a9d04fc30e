package microvm

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
	"os"
	goruntime "runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// A sandbox with Network joins the namespace the daemon's network service
// made for it (runtime.NetworkAttachment): there the veth's sandbox end
// (eth0) loses its address and joins a bridge with a TAP device, whose
// descriptor QEMU is given: the guest's virtio-net interface takes the
// sandbox's address and routes through the gateway, as eth0 did. QEMU
// itself stays in the host's namespace. The bridge and TAP device live
// in the namespace and go with it when the service tears it down.

// Names in a sandbox's directory and network namespace.
const (
	bridgeName = "br0"
	tapName    = "tap0"
	vethName   = "eth0" // the network service's sandbox end
)

// guestNet is what the guest is told of its network.
type guestNet struct {
	addr    netip.Prefix // its address and the /30's length
	gateway netip.Addr
	dns     netip.Addr // its nameserver, if any
	mac     net.HardwareAddr
}

// setupNetwork bridges a TAP device into the namespace of spec's network
// and returns what the guest is told and the TAP device's descriptor for
// QEMU.
func setupNetwork(spec runtime.Spec) (guestNet, *os.File, error) {
	nw := spec.Network
	g := guestNet{
		addr:    netip.PrefixFrom(nw.Addr, nw.Bits),
		gateway: nw.Gateway,
		dns:     nw.Nameserver,
		mac:     macOf(spec.ID),
	}
	ns, err := netns.GetFromPath(nw.NetnsPath)
	if err != nil {
		return g, nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer ns.Close()
	tap, err := bridgeTap(ns, nw.Addr)
	if err != nil {
		return g, nil, err
	}
	return g, tap, nil
}

// bridgeTap moves the sandbox's address off the veth's end in ns, makes
// a bridge of it and a TAP device, and returns the TAP device's
// descriptor. The device is not persistent: it goes when QEMU, the last
// holder of the descriptor, exits.
func bridgeTap(ns netns.NsHandle, addr netip.Addr) (*os.File, error) {
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
			return nil, fmt.Errorf("moving the sandbox's address %s to the guest: %w", addr, err)
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

// macOf is a locally administered unicast MAC address derived from a
// sandbox id.
func macOf(id string) net.HardwareAddr {
	h := sha256.Sum256([]byte(id))
	return net.HardwareAddr{0x02, h[0], h[1], h[2], h[3], h[4]}
}
