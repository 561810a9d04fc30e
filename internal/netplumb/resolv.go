package netplumb

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// resolvConf derives a sandbox's /etc/resolv.conf from the host's: its one
// nameserver is the sandbox's gateway, whose port 53 the firewall sends to
// hutch's resolver (Options.DNS), which answers for the sandbox's network
// peers, applies its egress policy and asks the host's own nameservers
// the rest. search, domain and options lines are kept.
func resolvConf(host []byte, gateway netip.Addr) []byte {
	var b bytes.Buffer
	b.WriteString("# written by hutch: the gateway is hutch's resolver\n")
	fmt.Fprintf(&b, "nameserver %s\n", gateway)
	sc := bufio.NewScanner(bytes.NewReader(host))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "search", "domain", "options":
			b.WriteString(strings.Join(fields, " ") + "\n")
		}
	}
	return b.Bytes()
}
