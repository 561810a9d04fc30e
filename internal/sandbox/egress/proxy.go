package egress

// Decisions of hutch's egress proxy (internal/egressproxy). While a
// policy has name rules, a sandbox's TCP connections to ports 80 and 443
// and to the ports its name rules name are redirected to the proxy, which
// decides on the name the connection carries (TLS SNI, HTTP Host): the
// resolver's learned addresses no longer decide for those ports, so a
// denied name that shares an address with an allowed one stays refused.

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/internal/netplumb"
)

// webPorts are the ports the proxy always takes while name rules are in
// force.
var webPorts = []uint16{80, 443}

// Decision is the proxy's verdict on a name or an address, with the
// policy entry that decided it ("" when none did).
type Decision struct {
	Allow bool
	// ByAddress means the name matched no name rule: its addresses must
	// each pass AdmitAddr (a CIDR rule may admit them).
	ByAddress bool
	Rule      string
}

// Named reports whether p has name rules or transforms: then the proxy
// decides.
func (p *Policy) Named() bool {
	return p != nil && len(p.allowNames)+len(p.denyNames)+len(p.transforms) > 0
}

// ProxyPorts are the TCP ports whose connections go through the proxy
// while p has name rules: 80, 443 and those its name rules name; none
// without name rules.
func (p *Policy) ProxyPorts() []uint16 {
	if !p.Named() {
		return nil
	}
	ports := slices.Clone(webPorts)
	for _, r := range append(slices.Clone(p.allowNames), p.denyNames...) {
		if r.port != 0 {
			ports = append(ports, r.port)
		}
	}
	return SortedSet(ports)
}

// String is the rule as written in a policy.
func (r nameRule) String() string {
	s := r.name
	if r.wildcard {
		s = "*." + s
	}
	if r.port != 0 {
		s += ":" + strconv.Itoa(int(r.port))
	}
	return s
}

func (r nameRule) matchesPort(name string, port uint16) bool {
	return (r.port == 0 || r.port == port) && r.matches(name)
}

// AdmitName decides on a connection to name (lowercase, without the final
// dot) on port: a deny_out name wins; then an allow_out name admits it;
// with allow_out and no name of it matching, its addresses decide.
func (p *Policy) AdmitName(name string, port uint16) Decision {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if p == nil {
		return Decision{Allow: true}
	}
	for _, r := range p.denyNames {
		if r.matchesPort(name, port) {
			return Decision{Rule: "deny_out " + r.String()}
		}
	}
	if !p.addrs.Restricted {
		return Decision{Allow: true}
	}
	for _, r := range p.allowNames {
		if r.matchesPort(name, port) {
			return Decision{Allow: true, Rule: "allow_out " + r.String()}
		}
	}
	return Decision{ByAddress: true}
}

// AdmitAddr decides on a connection to addr on port by p's address
// rules: a deny_out CIDR wins; with allow_out, only an allow_out CIDR
// admits it. Names the resolver learned do not count.
func (p *Policy) AdmitAddr(addr netip.Addr, port uint16) Decision {
	if p == nil {
		return Decision{Allow: true}
	}
	addr = addr.Unmap()
	match := func(rules []netplumb.Rule) (netplumb.Rule, bool) {
		for _, r := range rules {
			if (r.Port == 0 || r.Port == port) && r.Prefix.Contains(addr) {
				return r, true
			}
		}
		return netplumb.Rule{}, false
	}
	if r, ok := match(p.addrs.Deny); ok {
		return Decision{Rule: "deny_out " + r.String()}
	}
	if !p.addrs.Restricted {
		return Decision{Allow: true}
	}
	if r, ok := match(p.addrs.Allow); ok {
		return Decision{Allow: true, Rule: "allow_out " + r.String()}
	}
	return Decision{Rule: "allow_out (no entry admits it)"}
}
