package netplumb

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

func testNft() *nft {
	return &nft{bin: "nft", table: "hutch_test", comment: "hutch sandboxes of /tmp/x", pool: netip.MustParsePrefix("10.200.0.0/16")}
}

func testLease() *Lease {
	return &Lease{
		ID: "3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab", HostIf: "hutch0123456789",
		Gateway: netip.MustParseAddr("10.200.0.1"), Addr: netip.MustParseAddr("10.200.0.2"),
		Ports: []uint16{5432, 8080},
	}
}

func TestAddScript(t *testing.T) {
	n, l := testNft(), testLease()
	for _, tc := range []struct {
		name  string
		ports []uint16
		dns   string
		want  []string
		never []string
	}{
		{"ports and hutch's resolver", []uint16{5432, 8080}, "127.0.0.1:40053", []string{
			`add chain inet hutch_test sandbox_3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab { comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" ; }`,
			`ip daddr 10.200.0.1 tcp dport { 5432, 8080 } dnat ip to 127.0.0.1 comment`,
			`ip daddr 10.200.0.1 meta l4proto { tcp, udp } th dport 53 dnat ip to 127.0.0.1:40053 comment`,
			`add element inet hutch_test egress_chains { "hutch0123456789" comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" : jump egress_3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab }`,
			`add element inet hutch_test ifaces { "hutch0123456789" comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" }`,
			`add element inet hutch_test sources { "hutch0123456789" . 10.200.0.2 comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" }`,
			`add element inet hutch_test nat_chains { "hutch0123456789" comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" : jump sandbox_3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab }`,
		}, nil},
		{"no ports, no resolver", nil, "", []string{"add chain", "add element"}, []string{"dnat ip to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.Ports = tc.ports
			var dns netip.AddrPort
			if tc.dns != "" {
				dns = netip.MustParseAddrPort(tc.dns)
			}
			s := n.addScript(l, dns, Egress{})
			checkScript(t, s, tc.want, tc.never)
		})
	}
}

// checkScript checks that script has every line of want and none of never.
func checkScript(t *testing.T, script string, want, never []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(script, w) {
			t.Errorf("script lacks %q:\n%s", w, script)
		}
	}
	for _, w := range never {
		if strings.Contains(script, w) {
			t.Errorf("script has %q:\n%s", w, script)
		}
	}
}

func TestBaseScriptNeverForwardsBlanket(t *testing.T) {
	s := testNft().baseScript()
	// The only DNAT is per sandbox chain; the fixed part has none.
	if strings.Contains(s, "dnat ip to") || strings.Contains(s, "redirect") {
		t.Fatalf("fixed part forwards ports:\n%s", s)
	}
	for _, w := range []string{
		"ip saddr 10.200.0.0/16 oifname != @ifaces masquerade",
		"meta nfproto ipv4 ct status dnat accept",
		"ip daddr { 10.200.0.0/16, 169.254.0.0/16 } reject",
		"add rule inet hutch_test forward_to_sandboxes drop",
		// Before connection tracking, a sandbox sends from its address only.
		"add chain inet hutch_test antispoof { type filter hook prerouting priority raw ; policy accept ; }",
		"add rule inet hutch_test antispoof iifname @ifaces iifname . ip saddr @sources accept\nadd rule inet hutch_test antispoof iifname @ifaces drop\n",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("fixed part lacks %q:\n%s", w, s)
		}
	}
}

func TestBaseScriptBlocksPrivateNetworks(t *testing.T) {
	n := testNft()
	block := "iifname != @private_open ip daddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 192.0.0.0/24, 168.63.129.16/32 } reject"
	s := n.baseScript()
	// Peers first, then the sandbox's own policy, then the fixed blocks;
	// the private ranges closed to every sandbox not in private_open.
	peers, egress, pool, private := strings.Index(s, "forward_from_sandboxes iifname . oifname @peers accept"),
		strings.Index(s, "iifname vmap @egress_chains"), strings.Index(s, "ip daddr { 10.200.0.0/16, 169.254.0.0/16 } reject"), strings.Index(s, block)
	if peers < 0 || egress < peers || pool < egress || private < pool {
		t.Errorf("want peers, egress, pool and private blocks in that order:\n%s", s)
	}
	if strings.Contains(s, "dport 53 accept") {
		t.Errorf("a DNS exception in the fixed part:\n%s", s)
	}
	// A sandbox made with block_private_networks off is put in the set,
	// and taken out with its other elements; one made with it on is not.
	l := testLease()
	open := "add element inet hutch_test private_open { \"" + l.HostIf + "\""
	if add := n.addScript(l, netip.AddrPort{}, Egress{}); strings.Contains(add, open) {
		t.Errorf("a blocked sandbox opened private ranges:\n%s", add)
	}
	l.OpenPrivate = true
	if add := n.addScript(l, netip.AddrPort{}, Egress{}); !strings.Contains(add, open) {
		t.Errorf("an open sandbox not in private_open:\n%s", add)
	}
	del := "delete element inet hutch_test private_open { \"" + l.HostIf + "\" }"
	if d := n.deleteScript(stateOf(l, nil), l.ID, l.HostIf); !strings.Contains(d, del) {
		t.Errorf("teardown leaves the sandbox in private_open:\n%s", d)
	}
}

func TestEgressRules(t *testing.T) {
	n, l := testNft(), testLease()
	r := func(p string, port uint16) Rule { return Rule{netip.MustParsePrefix(p), port} }
	for _, tc := range []struct {
		name        string
		e           Egress
		want, never []string
	}{
		{"no policy: an empty chain", Egress{}, []string{"flush chain inet hutch_test egress_" + l.ID}, []string{"add rule inet hutch_test egress_", "add element inet hutch_test eg_"}},
		{"deny only", Egress{Deny: []Rule{r("192.0.2.0/24", 0), r("198.51.100.7/32", 5432)}}, []string{
			"add element inet hutch_test eg_deny_" + l.ID + " { 192.0.2.0/24 }",
			"add element inet hutch_test eg_denyp_" + l.ID + " { 198.51.100.7/32 . 5432 }",
			"ip daddr @eg_deny_" + l.ID + " counter name eg_denied_" + l.ID + " reject with icmpx admin-prohibited",
		}, []string{"return\nadd rule inet hutch_test egress_" + l.ID + " counter"}},
		{"restricted, overlaps merged", Egress{Restricted: true, Allow: []Rule{r("10.1.0.0/16", 0), r("10.0.0.0/8", 0), r("10.0.0.0/8", 0), r("203.0.113.9/32", 443)}}, []string{
			"add element inet hutch_test eg_allow_" + l.ID + " { 10.0.0.0/8 }",
			"add element inet hutch_test eg_allowp_" + l.ID + " { 203.0.113.9/32 . 443 }",
			"ip daddr @eg_learn_" + l.ID + " return",
			"add rule inet hutch_test egress_" + l.ID + " counter name eg_denied_" + l.ID + " reject with icmpx admin-prohibited",
		}, []string{"10.1.0.0/16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := n.addScript(l, netip.AddrPort{}, tc.e)
			checkScript(t, s, tc.want, tc.never)
		})
	}
}

// listing is `nft -j list table` output of nft 1.0.6 (trimmed): one
// sandbox whose elements carry comments, and one element without.
const listing = `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
{"table": {"family": "inet", "name": "hutch_test", "handle": 2}},
{"set": {"family": "inet", "name": "ifaces", "table": "hutch_test", "type": "ifname", "handle": 1,
  "elem": [{"elem": {"val": "hutch0123456789", "comment": "hutch sandbox a"}}, "hutchffffffffff"]}},
{"set": {"family": "inet", "name": "sources", "table": "hutch_test", "type": ["ifname", "ipv4_addr"], "handle": 4,
  "elem": [{"elem": {"val": {"concat": ["hutch0123456789", "10.200.0.2"]}, "comment": "hutch sandbox a"}}, {"concat": ["hutchffffffffff", "10.200.0.6"]}]}},
{"map": {"family": "inet", "name": "nat_chains", "table": "hutch_test", "type": "ifname", "handle": 2, "map": "verdict",
  "elem": [[{"elem": {"val": "hutch0123456789", "comment": "hutch sandbox a"}}, {"jump": {"target": "sandbox_a"}}]]}},
{"chain": {"family": "inet", "table": "hutch_test", "name": "sandbox_a", "handle": 3}},
{"chain": {"family": "inet", "table": "hutch_test", "name": "prerouting", "handle": 8, "type": "nat", "hook": "prerouting", "prio": -100, "policy": "accept"}},
{"chain": {"family": "inet", "table": "hutch_test", "name": "forward_to_sandboxes", "handle": 12}},
{"rule": {"family": "inet", "table": "hutch_test", "chain": "sandbox_a", "handle": 5, "comment": "hutch sandbox a", "expr": []}}]}`

func TestParseTableAndDeleteScript(t *testing.T) {
	st, err := parseTable([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.ifaces, []string{"hutch0123456789", "hutchffffffffff"}) || !slices.Equal(st.dnat, []string{"hutch0123456789"}) ||
		!slices.Equal(st.sources, [][2]string{{"hutch0123456789", "10.200.0.2"}, {"hutchffffffffff", "10.200.0.6"}}) {
		t.Fatalf("parsed %+v", st)
	}
	// Fixed chains are not a sandbox's: only "a" is an id.
	if ids := st.ids(); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("ids = %v", ids)
	}
	n := testNft()
	for _, tc := range []struct {
		name, id, hostIf, want string
	}{
		{"everything of a", "a", "hutch0123456789",
			"delete element inet hutch_test nat_chains { \"hutch0123456789\" }\n" +
				"delete element inet hutch_test ifaces { \"hutch0123456789\" }\n" +
				"delete element inet hutch_test sources { \"hutch0123456789\" . 10.200.0.2 }\n" +
				"flush chain inet hutch_test sandbox_a\ndelete chain inet hutch_test sandbox_a\n"},
		{"only set elements", "b", "hutchffffffffff", "delete element inet hutch_test ifaces { \"hutchffffffffff\" }\n" +
			"delete element inet hutch_test sources { \"hutchffffffffff\" . 10.200.0.6 }\n"},
		{"nothing", "c", "hutch0000000000", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := n.deleteScript(st, tc.id, tc.hostIf); got != tc.want {
				t.Errorf("deleteScript =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := parseTable([]byte("not json")); err == nil {
		t.Error("parseTable(garbage) = nil error")
	}
}

// TestScriptsAcceptedByKernel checks the scripts with `nft --check`, which
// validates them against the running kernel without changing anything.
func TestScriptsAcceptedByKernel(t *testing.T) {
	testutil.RequiresRoot(t)
	testutil.RequiresBinary(t, "nft")
	n := testNft()
	n.table = "hutch_check_only"
	l := testLease()
	l.OpenPrivate = true
	e := Egress{Restricted: true, Allow: []Rule{{netip.MustParsePrefix("10.0.0.0/8"), 0}, {netip.MustParsePrefix("203.0.113.9/32"), 443}},
		Deny: []Rule{{netip.MustParsePrefix("192.0.2.0/24"), 0}, {netip.MustParsePrefix("198.51.100.7/32"), 5432}}}
	script := n.baseScript() + n.addScript(l, netip.MustParseAddrPort("127.0.0.1:40053"), e)
	if _, err := n.run(context.Background(), script, "--check", "-f", "-"); err != nil {
		t.Fatalf("nft rejects the scripts: %v\n%s", err, script)
	}
}

// TestHostIfFitsIFNAMSIZ checks that host veth names fit the kernel's
// 15-byte interface name limit and carry the project's prefix.
func TestHostIfFitsIFNAMSIZ(t *testing.T) {
	n, err := New(Options{Owner: "some owner"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab"} {
		if name := n.hostIf(id); len(name) > 15 || !strings.HasPrefix(name, "hutch") {
			t.Errorf("hostIf(%q) = %q: want a hutch name of at most 15 bytes", id, name)
		}
	}
}
