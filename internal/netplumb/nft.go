package netplumb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// The firewall is one nftables table per Network (family inet), so that
// every rule hutch adds can be listed, and removed, in one place and never
// touches another program's rules. Its fixed part (chains hooked into
// prerouting, postrouting, input and forward, and the rules that apply to
// every sandbox) is written once; each sandbox adds one element to the set
// of sandbox interfaces, one to the verdict map that sends its traffic to
// its own chain, and that chain with its port forwards. Everything is
// applied with `nft -f -` (argv, the script on stdin), which makes each
// change one atomic transaction; the nftables Go bindings would need a
// hand-assembled bytecode expression per match, for no gain in safety.
//
// The rules, per sandbox interface:
//   - prerouting (raw, before connection tracking): a packet that does not
//     come from the sandbox's own lease address is dropped, IPv6 and every
//     other source included (the set sources holds one host veth . address
//     element per sandbox): code in a sandbox, root in its guest or its
//     own namespace, cannot send as another sandbox (to hutch's resolver,
//     which knows a sandbox by its address) or as any outside address;
//   - prerouting (dstnat): to the gateway's forwarded TCP ports, DNAT to
//     127.0.0.1 on the same port (route_localnet lets the kernel route it);
//     to the gateway's port 53, DNAT to hutch's resolver (Options.DNS);
//   - input: only replies and DNATed connections reach the host, anything
//     else is refused (TCP reset, else ICMP port unreachable);
//   - forward: IPv4 only; to a peer on a shared sandbox network, accepted;
//     then the sandbox's egress chain (egress.go); not to the pool (other
//     sandboxes), not to link-local addresses (cloud metadata services),
//     not to privateRanges unless the sandbox's veth is in the set
//     private_open (block_private_networks off when it was made), not into
//     another sandbox interface; nothing enters a sandbox interface but
//     replies and connections from its peers;
//   - postrouting (srcnat): the pool is masqueraded on the way out.

// Chain and set names of the fixed part.
const (
	setIfaces     = "ifaces"                 // host-side veths of live sandboxes
	setSources    = "sources"                // host veth . the one source address it may send from
	setOpen       = "private_open"           // host veths of sandboxes made with block_private_networks off
	chainSpoof    = "antispoof"              // prerouting, raw: drops forged source addresses
	mapDNAT       = "nat_chains"             // host veth → jump to the sandbox's chain
	chainToHost   = "input_from_sandboxes"   // input from sandboxes
	chainOut      = "forward_from_sandboxes" // forwarded from sandboxes
	chainIn       = "forward_to_sandboxes"   // forwarded to sandboxes
	sandboxPrefix = "sandbox_"               // + sandbox id: a sandbox's DNAT rules
)

// privateRanges are the destinations block_private_networks closes to
// sandboxes, besides the pool and 169.254.0.0/16 (always closed): RFC 1918,
// carrier-grade NAT (also Alibaba's metadata service, 100.100.100.200),
// IETF protocol assignments (Oracle's 192.0.0.192) and Azure's wireserver.
// Host addresses need no rule: traffic to them is input, not forwarded,
// and input takes only replies and the gateway's forwarded ports.
var privateRanges = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "192.0.0.0/24", "168.63.129.16/32"}

// ClosedRanges are the destinations the forward path closes to every
// sandbox: the pool and link-local addresses. hutch's egress proxy, which
// connects from the host, refuses them too.
func ClosedRanges(pool netip.Prefix) []netip.Prefix {
	out := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	if pool.IsValid() {
		out = append(out, pool)
	}
	return out
}

// PrivateRanges are the destinations closed to a sandbox made with
// block_private_networks (Sandbox.OpenPrivate false).
func PrivateRanges() []netip.Prefix {
	out := make([]netip.Prefix, len(privateRanges))
	for i, r := range privateRanges {
		out[i] = netip.MustParsePrefix(r)
	}
	return out
}

// nft applies and lists the rules of one table.
type nft struct {
	bin     string // nft binary
	table   string // table name, family inet
	comment string // the table's comment: says whose it is
	pool    netip.Prefix
}

// sandboxChain names the chain of sandbox id.
func sandboxChain(id string) string { return sandboxPrefix + id }

// baseScript declares the table, its sets and maps, and (re)writes the
// rules of its fixed chains. It is idempotent and leaves sandboxes' chains
// and elements alone.
func (t *nft) baseScript() string {
	var s script
	s.add("add table inet %s { comment %q ; }", t.table, t.comment)
	s.add("add set inet %s %s { type ifname ; }", t.table, setIfaces)
	s.add("add set inet %s %s { type ifname . ifname ; }", t.table, peersSet)
	s.add("add set inet %s %s { type ifname . ipv4_addr ; }", t.table, setSources)
	s.add("add set inet %s %s { type ifname ; }", t.table, setOpen)
	s.add("add map inet %s %s { type ifname : verdict ; }", t.table, mapDNAT)
	s.add("add map inet %s %s { type ifname : verdict ; }", t.table, egressMap)
	hooks := []struct{ name, def string }{
		{chainSpoof, "type filter hook prerouting priority raw ; policy accept ;"},
		{"prerouting", "type nat hook prerouting priority dstnat ; policy accept ;"},
		{"postrouting", "type nat hook postrouting priority srcnat ; policy accept ;"},
		{"input", "type filter hook input priority filter ; policy accept ;"},
		{"forward", "type filter hook forward priority filter ; policy accept ;"},
	}
	for _, h := range hooks {
		s.add("add chain inet %s %s { %s }", t.table, h.name, h.def)
	}
	for _, c := range []string{chainToHost, chainOut, chainIn} {
		s.add("add chain inet %s %s", t.table, c)
	}
	for _, c := range []string{chainSpoof, "prerouting", "postrouting", "input", "forward", chainToHost, chainOut, chainIn} {
		s.add("flush chain inet %s %s", t.table, c)
	}
	rule := func(chain, format string, args ...any) {
		s.add("add rule inet %s %s %s", t.table, chain, fmt.Sprintf(format, args...))
	}
	rule(chainSpoof, "iifname @%s iifname . ip saddr @%s accept", setIfaces, setSources)
	rule(chainSpoof, "iifname @%s drop", setIfaces)
	rule("prerouting", "iifname vmap @%s", mapDNAT)
	rule("postrouting", "ip saddr %s oifname != @%s masquerade", t.pool, setIfaces)
	rule("input", "iifname @%s jump %s", setIfaces, chainToHost)
	rule("forward", "iifname @%s jump %s", setIfaces, chainOut)
	rule("forward", "oifname @%s jump %s", setIfaces, chainIn)
	rule(chainToHost, "ct state established,related accept")
	rule(chainToHost, "meta nfproto ipv4 ct status dnat accept")
	rule(chainToHost, "meta l4proto tcp reject with tcp reset")
	rule(chainToHost, "reject with icmpx port-unreachable")
	rule(chainOut, "meta nfproto != ipv4 drop")
	rule(chainOut, "iifname . oifname @%s accept", peersSet)
	rule(chainOut, "iifname vmap @%s", egressMap)
	rule(chainOut, "ip daddr { %s, 169.254.0.0/16 } reject with icmpx admin-prohibited", t.pool)
	// Fails closed: only a sandbox whose veth is in private_open passes.
	rule(chainOut, "iifname != @%s ip daddr { %s } reject with icmpx admin-prohibited", setOpen, strings.Join(privateRanges, ", "))
	rule(chainOut, "oifname @%s reject with icmpx admin-prohibited", setIfaces)
	rule(chainIn, "ct state established,related accept")
	rule(chainIn, "iifname . oifname @%s accept", peersSet)
	rule(chainIn, "drop")
	return s.String()
}

// addScript adds the rules of one sandbox's lease, its egress policy e,
// and the forward of its gateway's port 53 to dns.
func (t *nft) addScript(l *Lease, dns netip.AddrPort, e Egress) string {
	var s script
	chain := sandboxChain(l.ID)
	note := sandboxNote(l.ID)
	s.add("add chain inet %s %s { %s ; }", t.table, chain, note)
	if len(l.Ports) > 0 {
		ports := make([]string, len(l.Ports))
		for i, p := range l.Ports {
			ports[i] = fmt.Sprint(p)
		}
		s.add("add rule inet %s %s ip daddr %s tcp dport { %s } dnat ip to 127.0.0.1 %s",
			t.table, chain, l.Gateway, strings.Join(ports, ", "), note)
	}
	if dns.IsValid() {
		s.add("add rule inet %s %s ip daddr %s meta l4proto { tcp, udp } th dport 53 dnat ip to %s %s",
			t.table, chain, l.Gateway, dns, note)
	}
	t.egressDeclare(&s, l.ID)
	s.add("add rule inet %s %s jump %s %s", t.table, chain, proxyChain(l.ID), note)
	t.egressFill(&s, l.ID, e)
	s.add("add element inet %s %s { %q . %s %s }", t.table, setSources, l.HostIf, l.Addr, note)
	s.add("add element inet %s %s { %q %s }", t.table, setIfaces, l.HostIf, note)
	if l.OpenPrivate {
		s.add("add element inet %s %s { %q %s }", t.table, setOpen, l.HostIf, note)
	}
	s.add("add element inet %s %s { %q %s : jump %s }", t.table, mapDNAT, l.HostIf, note, chain)
	s.add("add element inet %s %s { %q %s : jump %s }", t.table, egressMap, l.HostIf, note, egressChain(l.ID))
	return s.String()
}

// deleteScript removes what st holds of sandbox id with host veth hostIf;
// "" when it holds nothing.
func (t *nft) deleteScript(st *tableState, id, hostIf string) string {
	var s script
	if slices.Contains(st.dnat, hostIf) {
		s.add("delete element inet %s %s { %q }", t.table, mapDNAT, hostIf)
	}
	if slices.Contains(st.egress, hostIf) {
		s.add("delete element inet %s %s { %q }", t.table, egressMap, hostIf)
	}
	if slices.Contains(st.ifaces, hostIf) {
		s.add("delete element inet %s %s { %q }", t.table, setIfaces, hostIf)
	}
	if slices.Contains(st.open, hostIf) {
		s.add("delete element inet %s %s { %q }", t.table, setOpen, hostIf)
	}
	for _, p := range st.peers {
		if p[0] == hostIf || p[1] == hostIf {
			s.add("delete element inet %s %s { %q . %q }", t.table, peersSet, p[0], p[1])
		}
	}
	for _, src := range st.sources {
		if src[0] == hostIf {
			s.add("delete element inet %s %s { %q . %s }", t.table, setSources, src[0], src[1])
		}
	}
	for _, chain := range []string{sandboxChain(id), egressChain(id), proxyChain(id)} {
		if slices.Contains(st.chains, chain) {
			s.add("flush chain inet %s %s", t.table, chain)
			s.add("delete chain inet %s %s", t.table, chain)
		}
	}
	for _, set := range egressObjects(id) {
		if slices.Contains(st.sets, set) {
			s.add("delete set inet %s %s", t.table, set)
		}
	}
	if c := deniedCounter(id); slices.Contains(st.counters, c) {
		s.add("delete counter inet %s %s", t.table, c)
	}
	return s.String()
}

// apply runs a script as one transaction.
func (t *nft) apply(ctx context.Context, script string) error {
	if script == "" {
		return nil
	}
	_, err := t.run(ctx, script, "-f", "-")
	return err
}

// deleteTable removes the whole table; a missing table is not an error.
func (t *nft) deleteTable(ctx context.Context) error {
	_, err := t.run(ctx, "", "delete", "table", "inet", t.table)
	if errors.Is(err, errNoTable) {
		return nil
	}
	return err
}

// tableState is what the table holds of sandboxes.
type tableState struct {
	chains   []string    // every chain's name
	sets     []string    // every set's name
	counters []string    // every named counter's name
	ifaces   []string    // elements of the interface set
	open     []string    // elements of private_open
	dnat     []string    // keys of the DNAT map
	egress   []string    // keys of the egress map
	peers    [][2]string // elements of the peers set
	sources  [][2]string // elements of the sources set: host veth, address
}

// stateOf is what a registered lease l put in the table.
func stateOf(l *Lease, peers [][2]string) *tableState {
	var open []string
	if l.OpenPrivate {
		open = []string{l.HostIf}
	}
	return &tableState{open: open,
		chains: []string{sandboxChain(l.ID), egressChain(l.ID), proxyChain(l.ID)}, sets: egressObjects(l.ID), counters: []string{deniedCounter(l.ID)},
		ifaces: []string{l.HostIf}, dnat: []string{l.HostIf}, egress: []string{l.HostIf}, peers: peers,
		sources: [][2]string{{l.HostIf, l.Addr.String()}},
	}
}

// ids returns the sandbox ids that st has a chain for.
func (st *tableState) ids() []string {
	var ids []string
	for _, c := range st.chains {
		if id, ok := strings.CutPrefix(c, sandboxPrefix); ok {
			ids = append(ids, id)
		} else if id, ok := strings.CutPrefix(c, egressPrefix); ok {
			ids = append(ids, id)
		} else if id, ok := strings.CutPrefix(c, proxyPrefix); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return ids
}

// list reads the table; a missing table is an empty state.
func (t *nft) list(ctx context.Context) (*tableState, error) {
	out, err := t.run(ctx, "", "-j", "list", "table", "inet", t.table)
	if errors.Is(err, errNoTable) {
		return &tableState{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseTable(out)
}

// parseTable decodes `nft -j list table` output.
func parseTable(b []byte) (*tableState, error) {
	var doc struct {
		Nftables []struct {
			Chain *struct {
				Name string `json:"name"`
			} `json:"chain"`
			Counter *struct {
				Name string `json:"name"`
			} `json:"counter"`
			Set *struct {
				Name string            `json:"name"`
				Elem []json.RawMessage `json:"elem"`
			} `json:"set"`
			Map *struct {
				Name string              `json:"name"`
				Elem [][]json.RawMessage `json:"elem"`
			} `json:"map"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decoding nft's listing: %w", err)
	}
	st := &tableState{}
	for _, o := range doc.Nftables {
		switch {
		case o.Chain != nil:
			st.chains = append(st.chains, o.Chain.Name)
		case o.Counter != nil:
			st.counters = append(st.counters, o.Counter.Name)
		case o.Set != nil:
			st.sets = append(st.sets, o.Set.Name)
			for _, e := range o.Set.Elem {
				switch o.Set.Name {
				case setIfaces:
					st.ifaces = append(st.ifaces, elemValue(e))
				case setOpen:
					st.open = append(st.open, elemValue(e))
				case peersSet:
					if p, ok := pairValue(e); ok {
						st.peers = append(st.peers, p)
					}
				case setSources:
					// The address goes unquoted into a delete script.
					if p, ok := pairValue(e); ok {
						if _, err := netip.ParseAddr(p[1]); err == nil {
							st.sources = append(st.sources, p)
						}
					}
				}
			}
		case o.Map != nil && (o.Map.Name == mapDNAT || o.Map.Name == egressMap):
			for _, kv := range o.Map.Elem {
				if len(kv) == 0 {
					continue
				}
				if o.Map.Name == mapDNAT {
					st.dnat = append(st.dnat, elemValue(kv[0]))
				} else {
					st.egress = append(st.egress, elemValue(kv[0]))
				}
			}
		}
	}
	return st, nil
}

// elemValue returns a set element's value: a plain JSON string, or
// {"elem": {"val": ..., "comment": ...}} when it has a comment.
func elemValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var e struct {
		Elem struct {
			Val string `json:"val"`
		} `json:"elem"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Elem.Val
}

// pairValue returns an element of two concatenated strings (an interface
// name, an address): {"concat": ["a", "b"]}, or {"elem": {"val":
// {"concat": [...]}, ...}} when it has a comment.
func pairValue(raw json.RawMessage) ([2]string, bool) {
	var e struct {
		Concat []string `json:"concat"`
		Elem   *struct {
			Val struct {
				Concat []string `json:"concat"`
			} `json:"val"`
		} `json:"elem"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return [2]string{}, false
	}
	if e.Elem != nil {
		e.Concat = e.Elem.Val.Concat
	}
	if len(e.Concat) != 2 {
		return [2]string{}, false
	}
	return [2]string{e.Concat[0], e.Concat[1]}, true
}

// counters returns the table's named counters and their packet counts.
func (t *nft) counters(ctx context.Context) (map[string]uint64, error) {
	out, err := t.run(ctx, "", "-j", "list", "counters", "table", "inet", t.table)
	if errors.Is(err, errNoTable) {
		return map[string]uint64{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Name    string `json:"name"`
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("decoding nft's counters: %w", err)
	}
	m := map[string]uint64{}
	for _, o := range doc.Nftables {
		if o.Counter != nil {
			m[o.Counter.Name] = o.Counter.Packets
		}
	}
	return m, nil
}

// errNoTable is nft's answer about a table that does not exist.
var errNoTable = errors.New("no such table")

// run runs nft with args and stdin, returning its stdout. A table that
// does not exist is errNoTable.
func (t *nft) run(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, t.bin, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "No such file or directory") && len(args) > 0 && args[0] != "-f" {
			return nil, errNoTable
		}
		if len(msg) > 2048 {
			msg = msg[:2048] + "…"
		}
		return nil, fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// script builds an nft script, one command a line.
type script struct{ b strings.Builder }

func (s *script) add(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
	s.b.WriteByte('\n')
}

func (s *script) String() string { return s.b.String() }
