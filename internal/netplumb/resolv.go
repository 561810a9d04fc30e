package netplumb

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// directNameservers are the nameservers a sandbox's resolv.conf (conf,
// from resolvConf) names as they are, rather than through its gateway.
func directNameservers(conf []byte, gateway netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, l := range strings.Split(string(conf), "\n") {
		if a, err := netip.ParseAddr(strings.TrimPrefix(l, "nameserver ")); err == nil && a != gateway {
			out = append(out, a)
		}
	}
	return out
}

// resolvConf derives a sandbox's /etc/resolv.conf from the host's. A
// sandbox reaches the outside over IPv4 only, so IPv4 nameservers are kept
// and IPv6 ones dropped. A nameserver on the host itself (loopback, such
// as systemd-resolved's 127.0.0.53, or one of the host's addresses, for
// which local reports true) is closed to the sandbox by the firewall: the
// first one becomes the gateway, and its address is returned as dns, the
// target that the gateway's port 53 is forwarded to; other such ones are
// dropped. search, domain and options lines are kept.
func resolvConf(host []byte, gateway netip.Addr, local func(netip.Addr) bool) (conf []byte, dns netip.Addr) {
	var b bytes.Buffer
	b.WriteString("# written by hutch from the host's resolver configuration\n")
	servers := 0
	sc := bufio.NewScanner(bytes.NewReader(host))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			a, err := netip.ParseAddr(fields[1])
			switch {
			case err != nil || !a.Unmap().Is4():
				continue
			case a.IsLoopback() || local(a.Unmap()):
				if dns.IsValid() {
					continue
				}
				dns = a.Unmap()
				a = gateway
			}
			fmt.Fprintf(&b, "nameserver %s\n", a.Unmap())
			servers++
		case "search", "domain", "options":
			b.WriteString(strings.Join(fields, " ") + "\n")
		}
	}
	if servers == 0 {
		b.WriteString("# the host has no IPv4 nameserver: names do not resolve in the sandbox\n")
	}
	return b.Bytes(), dns
}
