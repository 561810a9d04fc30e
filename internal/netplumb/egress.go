package netplumb

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Egress policy and sandbox networks, in the sandbox's own firewall chain.
//
// Every sandbox with a network has a chain egress_<id>, reached from the
// forward path by the verdict map egress_chains (host veth → jump), with
// six sets: static allow and deny rules (ipv4_addr, or ipv4_addr .
// inet_service for a rule with a port, both with intervals) and the
// addresses hutch's resolver learned from allowed names (with a timeout:
// their TTL). Replies and connections already made pass; then denies
// reject, allows and learned addresses return to the fixed rules (which
// still close the pool, link-local and, if set, private ranges); with a
// restricted policy everything else is rejected and counted in the
// counter eg_denied_<id>. A sandbox with no policy has an empty chain.
// The host applies it on the sandbox's veth: code in the sandbox, root in
// its own network namespace, cannot change it.
//
// Sandbox networks are the set peers of (host veth . host veth) pairs that
// may open connections to each other; it is accepted before the pool is
// closed, and whole (flush and refill) on every change.

// Rule is one egress rule in address terms: a prefix and, optionally, one
// port (TCP or UDP); Port 0 is every port and protocol.
type Rule struct {
	Prefix netip.Prefix
	Port   uint16
}

// String is the rule as written in a policy: "10.0.0.0/8", "1.2.3.4:443".
func (r Rule) String() string {
	s := r.Prefix.String()
	if r.Prefix.IsSingleIP() {
		s = r.Prefix.Addr().String()
	}
	if r.Port != 0 {
		s += fmt.Sprint(":", r.Port)
	}
	return s
}

// Egress is a sandbox's outbound policy in address terms.
type Egress struct {
	// Restricted rejects what no Allow rule or learned address admits.
	Restricted bool
	Allow      []Rule
	Deny       []Rule
	// Proxy, when valid, is hutch's egress proxy (an address of the
	// host's loopback): the sandbox's new TCP connections to ProxyPorts,
	// except to the pool, are led to it, and its UDP to port 443 (QUIC)
	// is refused, so that clients fall back to TCP.
	Proxy      netip.AddrPort
	ProxyPorts []uint16
}

// Object names of a sandbox's egress part.
const (
	egressMap    = "egress_chains" // host veth → jump to the sandbox's egress chain
	peersSet     = "peers"         // host veth . host veth pairs that reach each other
	egressPrefix = "egress_"       // + id: the sandbox's egress chain
	deniedPrefix = "eg_denied_"    // + id: its counter of rejected packets
	proxyPrefix  = "proxy_"        // + id: the sandbox's redirects to the egress proxy (nat)
)

// egressSets are the suffixes of a sandbox's egress sets and their types.
var egressSets = []struct{ kind, def string }{
	{"allow", "type ipv4_addr ; flags interval ;"},
	{"allowp", "type ipv4_addr . inet_service ; flags interval ;"},
	{"deny", "type ipv4_addr ; flags interval ;"},
	{"denyp", "type ipv4_addr . inet_service ; flags interval ;"},
	{"learn", "type ipv4_addr ; flags timeout ;"},
	{"learnp", "type ipv4_addr . inet_service ; flags timeout ;"},
}

func egressChain(id string) string     { return egressPrefix + id }
func egressSet(kind, id string) string { return "eg_" + kind + "_" + id }
func proxyChain(id string) string      { return proxyPrefix + id }
func deniedCounter(id string) string   { return deniedPrefix + id }
func sandboxNote(id string) string     { return fmt.Sprintf("comment %q", "hutch sandbox "+id) }
func portSuffix(ports bool) string     { return map[bool]string{true: "p"}[ports] }
func egressObjects(id string) (sets []string) {
	for _, s := range egressSets {
		sets = append(sets, egressSet(s.kind, id))
	}
	return sets
}

// egressDeclare declares a sandbox's egress chain, sets and counter.
func (t *nft) egressDeclare(s *script, id string) {
	note := sandboxNote(id)
	for _, set := range egressSets {
		s.add("add set inet %s %s { %s %s ; }", t.table, egressSet(set.kind, id), set.def, note)
	}
	s.add("add counter inet %s %s { %s ; }", t.table, deniedCounter(id), note)
	s.add("add chain inet %s %s { %s ; }", t.table, egressChain(id), note)
	s.add("add chain inet %s %s { %s ; }", t.table, proxyChain(id), note)
}

// egressFill (re)writes the rules and static sets of sandbox id's egress
// chain for policy e, dropping what it had learned.
func (t *nft) egressFill(s *script, id string, e Egress) {
	chain := egressChain(id)
	s.add("flush chain inet %s %s", t.table, chain)
	t.proxyFill(s, id, e)
	for _, set := range egressSets {
		s.add("flush set inet %s %s", t.table, egressSet(set.kind, id))
	}
	rule := func(format string, args ...any) {
		s.add("add rule inet %s %s %s", t.table, chain, fmt.Sprintf(format, args...))
	}
	elements := func(kind string, rules []Rule) {
		if len(rules) > 0 {
			s.add("add element inet %s %s { %s }", t.table, egressSet(kind, id), setElements(rules))
		}
	}
	counter := "counter name " + deniedCounter(id)
	reject := counter + " reject with icmpx admin-prohibited"
	if e.Proxy.IsValid() {
		rule("udp dport 443 %s", reject)
	}
	if !e.Restricted && len(e.Deny) == 0 {
		return
	}
	rule("ct state established,related return")
	for _, ports := range []bool{false, true} {
		deny, allow := byPort(e.Deny, ports), byPort(e.Allow, ports)
		elements("deny"+portSuffix(ports), deny)
		elements("allow"+portSuffix(ports), allow)
	}
	rule("ip daddr @%s %s", egressSet("deny", id), reject)
	rule("meta l4proto { tcp, udp } ip daddr . th dport @%s %s", egressSet("denyp", id), reject)
	if !e.Restricted {
		return
	}
	for _, kind := range []string{"allow", "learn"} {
		rule("ip daddr @%s return", egressSet(kind, id))
		rule("meta l4proto { tcp, udp } ip daddr . th dport @%s return", egressSet(kind+"p", id))
	}
	rule("%s", reject)
}

// proxyFill (re)writes sandbox id's redirects to the egress proxy: its
// new TCP connections to e.ProxyPorts, but to the pool (its peers and
// gateway), are DNATed to e.Proxy, which reads their original destination
// from conntrack. Connections already made keep their way.
func (t *nft) proxyFill(s *script, id string, e Egress) {
	chain := proxyChain(id)
	s.add("add chain inet %s %s { %s ; }", t.table, chain, sandboxNote(id))
	s.add("flush chain inet %s %s", t.table, chain)
	if !e.Proxy.IsValid() || len(e.ProxyPorts) == 0 {
		return
	}
	ports := make([]string, len(e.ProxyPorts))
	for i, p := range e.ProxyPorts {
		ports[i] = fmt.Sprint(p)
	}
	s.add("add rule inet %s %s ip daddr != %s tcp dport { %s } ct state new dnat ip to %s",
		t.table, chain, t.pool, strings.Join(ports, ", "), e.Proxy)
}

// byPort returns the rules with a port (ports) or without, without
// duplicates and without a prefix that another one of the same port
// covers: an interval set refuses overlapping elements.
func byPort(rules []Rule, ports bool) []Rule {
	var out []Rule
	for _, r := range rules {
		if (r.Port != 0) == ports {
			out = append(out, Rule{r.Prefix.Masked(), r.Port})
		}
	}
	slices.SortFunc(out, func(a, b Rule) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return int(a.Prefix.Bits()-b.Prefix.Bits())*65536 + int(a.Port) - int(b.Port)
	})
	out = slices.Compact(out)
	return slices.DeleteFunc(slices.Clone(out), func(r Rule) bool {
		for _, o := range out {
			if o.Port == r.Port && o.Prefix.Bits() < r.Prefix.Bits() && o.Prefix.Contains(r.Prefix.Addr()) {
				return true
			}
		}
		return false
	})
}

// setElements writes rules as set elements: "10.0.0.0/8", "1.2.3.4/32 . 443".
func setElements(rules []Rule) string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Prefix.String()
		if r.Port != 0 {
			out[i] += fmt.Sprint(" . ", r.Port)
		}
	}
	return strings.Join(out, ", ")
}

// SetEgress replaces sandbox id's egress policy (and forgets the
// addresses its resolver learned).
func (n *Network) SetEgress(ctx context.Context, id string, e Egress) error {
	if _, err := n.lease(id); err != nil {
		return err
	}
	var s script
	n.nft.egressFill(&s, id, e)
	return n.nft.apply(ctx, s.String())
}

// Learn lets sandbox id reach addrs (on port, 0 for every port) for ttl:
// the answers of hutch's resolver to an allowed name.
func (n *Network) Learn(ctx context.Context, id string, addrs []netip.Addr, port uint16, ttl time.Duration) error {
	if _, err := n.lease(id); err != nil || len(addrs) == 0 {
		return err
	}
	secs := max(int(ttl/time.Second), 1)
	elems := make([]string, len(addrs))
	for i, a := range addrs {
		elems[i] = a.String()
		if port != 0 {
			elems[i] += fmt.Sprint(" . ", port)
		}
		elems[i] += fmt.Sprintf(" timeout %ds", secs)
	}
	var s script
	s.add("add element inet %s %s { %s }", n.nft.table, egressSet("learn"+portSuffix(port != 0), id), strings.Join(elems, ", "))
	return n.nft.apply(ctx, s.String())
}

// SetPeers makes exactly the given pairs of sandboxes able to open
// connections to each other (both ways); sandboxes without a network here
// are left out.
func (n *Network) SetPeers(ctx context.Context, pairs [][2]string) error {
	n.mu.Lock()
	var ifs [][2]string
	for _, p := range pairs {
		a, b := n.leases[p[0]], n.leases[p[1]]
		if a != nil && b != nil && a != b {
			ifs = append(ifs, [2]string{a.HostIf, b.HostIf}, [2]string{b.HostIf, a.HostIf})
		}
	}
	slices.SortFunc(ifs, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	ifs = slices.Compact(ifs)
	ready := n.baseReady
	n.peers = ifs
	n.mu.Unlock()
	if !ready {
		return nil
	}
	elems := make([]string, len(ifs))
	for i, p := range ifs {
		elems[i] = fmt.Sprintf("%q . %q", p[0], p[1])
	}
	var s script
	s.add("flush set inet %s %s", n.nft.table, peersSet)
	if len(elems) > 0 {
		s.add("add element inet %s %s { %s }", n.nft.table, peersSet, strings.Join(elems, ", "))
	}
	return n.nft.apply(ctx, s.String())
}

// Denied returns, per sandbox with an egress policy, how many packets its
// policy rejected (a refused TCP connection is one).
func (n *Network) Denied(ctx context.Context) (map[string]uint64, error) {
	n.mu.Lock()
	ready := n.baseReady
	n.mu.Unlock()
	out := map[string]uint64{}
	if !ready {
		return out, nil
	}
	counters, err := n.nft.counters(ctx)
	if err != nil {
		return nil, err
	}
	for name, packets := range counters {
		if id, ok := strings.CutPrefix(name, deniedPrefix); ok {
			out[id] = packets
		}
	}
	return out, nil
}

// lease returns sandbox id's lease.
func (n *Network) lease(id string) (*Lease, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.leases[id]; l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("sandbox %s has no network", id)
}
