// Package egress is what a sandbox created with network: true reaches
// outside, as pure values. A policy's addresses and CIDRs go to the
// firewall as they are; its names go to hutch's resolver
// (internal/dnsgate), which answers only the names the policy admits and
// has the firewall allow their answers for their TTL. With allow_out,
// everything else is refused; deny_out wins. While a policy has name
// rules or transforms, web ports are decided by name at hutch's egress
// proxy instead (proxy.go, transform.go). The loopback URLs of a
// sandbox's env name the host ports its gateway forwards (gateway.go).
// The core compiles a create's policy and passes it through; networksvc
// applies it.
package egress

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxRules bounds the entries of one policy.
const maxRules = 256

// hostName matches a DNS name: labels of letters, digits and '-', the
// last one not all digits (that would be a mistyped address).
var hostName = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9-]*[a-z-][a-z0-9-]*$`)

// nameRule is a policy entry that names hosts.
type nameRule struct {
	name     string // lowercase, without the "*."
	wildcard bool   // any name under name (not name itself)
	port     uint16 // 0: every port
}

func (r nameRule) matches(name string) bool {
	if r.wildcard {
		return strings.HasSuffix(name, "."+r.name)
	}
	return name == r.name
}

// Policy is a policy compiled: address rules for the firewall, name
// rules for the resolver. A nil *Policy is no policy.
type Policy struct {
	source     api.EgressPolicy
	addrs      netplumb.Egress
	allowNames []nameRule
	denyNames  []nameRule
	transforms []Transform
}

// Compile checks p and compiles it (S001); nil for no policy.
func Compile(p *api.EgressPolicy) (*Policy, error) {
	if p.Empty() {
		return nil, nil
	}
	if n := len(p.AllowOut) + len(p.DenyOut); n > maxRules {
		return nil, errdefs.Malformed("an egress policy has at most %d entries, not %d", maxRules, n)
	}
	out := &Policy{source: *p, addrs: netplumb.Egress{Restricted: len(p.AllowOut) > 0}}
	var err error
	if out.transforms, err = compileTransforms(p.Transforms); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		field   string
		entries []string
		addrs   *[]netplumb.Rule
		names   *[]nameRule
	}{
		{"allow_out", p.AllowOut, &out.addrs.Allow, &out.allowNames},
		{"deny_out", p.DenyOut, &out.addrs.Deny, &out.denyNames},
	} {
		for _, e := range list.entries {
			addr, name, err := parseEntry(e)
			if err != nil {
				return nil, errdefs.Malformed("%s entry %q: %v", list.field, spec.Clip(e, 80), err)
			}
			if name != nil {
				*list.names = append(*list.names, *name)
			} else {
				*list.addrs = append(*list.addrs, addr)
			}
		}
	}
	return out, nil
}

// parseEntry reads "10.0.0.0/8", "1.2.3.4:443", "pypi.org",
// "*.github.com:443": an address rule, or a name rule.
func parseEntry(e string) (netplumb.Rule, *nameRule, error) {
	host, port := strings.ToLower(strings.TrimSpace(e)), uint16(0)
	if h, p, ok := strings.Cut(host, ":"); ok {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return netplumb.Rule{}, nil, errdefs.Malformed("the port must be 1 to 65535 (IPv6 is not supported)")
		}
		host, port = h, uint16(n)
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		if !pfx.Addr().Is4() {
			return netplumb.Rule{}, nil, errdefs.Malformed("only IPv4 is supported")
		}
		return netplumb.Rule{Prefix: pfx.Masked(), Port: port}, nil, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.Is4() {
			return netplumb.Rule{}, nil, errdefs.Malformed("only IPv4 is supported")
		}
		return netplumb.Rule{Prefix: netip.PrefixFrom(a, 32), Port: port}, nil, nil
	}
	rule := nameRule{name: strings.TrimSuffix(host, "."), port: port}
	rule.name, rule.wildcard = strings.CutPrefix(rule.name, "*.")
	if len(rule.name) > 253 || !hostName.MatchString(rule.name) {
		return netplumb.Rule{}, nil, errdefs.Malformed("not an IPv4 address, CIDR, host name or *.domain")
	}
	return netplumb.Rule{}, &rule, nil
}

// Verdict decides on a name the sandbox asks its resolver.
func (p *Policy) Verdict(name string) dnsgate.Verdict {
	if p == nil {
		return dnsgate.Verdict{}
	}
	for _, r := range p.denyNames {
		if r.matches(name) {
			return dnsgate.Verdict{Refuse: true}
		}
	}
	if !p.addrs.Restricted {
		return dnsgate.Verdict{}
	}
	var ports []uint16
	for _, r := range p.allowNames {
		if r.matches(name) {
			ports = append(ports, r.port)
		}
	}
	if len(ports) == 0 {
		return dnsgate.Verdict{Refuse: true}
	}
	if slices.Contains(ports, 0) {
		return dnsgate.Verdict{Ports: []uint16{0}}
	}
	slices.Sort(ports)
	return dnsgate.Verdict{Ports: slices.Compact(ports)}
}

// Check checks an egress policy as a create and
// sandbox::network::update do (S001).
func Check(p *api.EgressPolicy) error {
	_, err := Compile(p)
	return err
}

// Firewall is p's address rules; none for no policy.
func (p *Policy) Firewall() netplumb.Egress {
	if p == nil {
		return netplumb.Egress{}
	}
	return p.addrs
}

// Source is the policy p was compiled from; nil for none.
func (p *Policy) Source() *api.EgressPolicy {
	if p == nil {
		return nil
	}
	src := p.source
	return &src
}

// MustCompile compiles a policy that was checked when it was set;
// should it fail now, the policy refuses everything.
func MustCompile(p *api.EgressPolicy) *Policy {
	pol, err := Compile(p)
	if err != nil {
		return &Policy{source: *p, addrs: netplumb.Egress{Restricted: true}}
	}
	return pol
}
