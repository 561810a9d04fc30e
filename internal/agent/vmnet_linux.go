package agent

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// vmNetwork configures a microVM sandbox's network from the kernel command
// line (vmspec.KeyAddr, KeyGateway, KeyDNS): the address on its one
// interface, the default route through the gateway, and /etc/resolv.conf.
// Without KeyAddr the sandbox has loopback only.
func vmNetwork(params map[string]string) error {
	if params[vmspec.KeyAddr] == "" {
		return nil
	}
	prefix, err := netip.ParsePrefix(params[vmspec.KeyAddr])
	if err != nil {
		return fmt.Errorf("network address: %w", err)
	}
	gw, err := netip.ParseAddr(params[vmspec.KeyGateway])
	if err != nil {
		return fmt.Errorf("network gateway: %w", err)
	}
	name, err := waitFor("network interface", deviceWait, func() (string, error) { return findNetIf("/sys/class/net") })
	if err != nil {
		return err
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("finding %s: %w", name, err)
	}
	ipnet := &net.IPNet{IP: prefix.Addr().AsSlice(), Mask: net.CIDRMask(prefix.Bits(), prefix.Addr().BitLen())}
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: ipnet}); err != nil {
		return fmt.Errorf("adding address %s: %w", prefix, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing up %s: %w", name, err)
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
		return fmt.Errorf("adding the default route: %w", err)
	}
	// The kernel lets packets out once its link watcher has seen the
	// carrier (up to a second later, more under emulation): the sandbox's
	// first connection must not race it.
	if _, err := waitFor(name+" up", deviceWait, func() (string, error) {
		b, err := os.ReadFile("/sys/class/net/" + name + "/operstate")
		if err == nil && strings.TrimSpace(string(b)) == "up" {
			return "up", nil
		}
		return "", nil
	}); err != nil {
		return err
	}
	if dns, err := netip.ParseAddr(params[vmspec.KeyDNS]); err == nil {
		// The image's resolv.conf may be a symlink (to systemd's, say):
		// replace it in the sandbox's own layer.
		_ = os.Remove("/etc/resolv.conf")
		if err := os.WriteFile("/etc/resolv.conf", []byte("nameserver "+dns.String()+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing /etc/resolv.conf: %w", err)
		}
	}
	return nil
}
