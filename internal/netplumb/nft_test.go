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
		{"ports and loopback DNS", []uint16{5432, 8080}, "127.0.0.53", []string{
			`add chain inet hutch_test sandbox_3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab { comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" ; }`,
			`ip daddr 10.200.0.1 tcp dport { 5432, 8080 } dnat ip to 127.0.0.1 comment`,
			`ip daddr 10.200.0.1 meta l4proto { tcp, udp } th dport 53 dnat ip to 127.0.0.53 comment`,
			`add element inet hutch_test ifaces { "hutch0123456789" comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" }`,
			`add element inet hutch_test nat_chains { "hutch0123456789" comment "hutch sandbox 3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab" : jump sandbox_3f2a1b2c-1d2e-4f5a-8b9c-0123456789ab }`,
		}, nil},
		{"no ports, host resolver not loopback", nil, "", []string{"add chain", "add element"}, []string{"dnat ip to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.Ports = tc.ports
			var dns netip.Addr
			if tc.dns != "" {
				dns = netip.MustParseAddr(tc.dns)
			}
			s := n.addScript(l, dns)
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("script lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tc.never {
				if strings.Contains(s, w) {
					t.Errorf("script has %q:\n%s", w, s)
				}
			}
		})
	}
}

func TestBaseScriptNeverForwardsBlanket(t *testing.T) {
	s := testNft().baseScript(nil)
	// The only DNAT is per sandbox chain; the fixed part has none.
	if strings.Contains(s, "dnat ip to") || strings.Contains(s, "redirect") {
		t.Fatalf("fixed part forwards ports:\n%s", s)
	}
	for _, w := range []string{
		"ip saddr 10.200.0.0/16 oifname != @ifaces masquerade",
		"meta nfproto ipv4 ct status dnat accept",
		"ip daddr { 10.200.0.0/16, 169.254.0.0/16 } reject",
		"add rule inet hutch_test forward_to_sandboxes drop",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("fixed part lacks %q:\n%s", w, s)
		}
	}
}

func TestBaseScriptBlocksPrivateNetworks(t *testing.T) {
	n := testNft()
	resolver := []netip.Addr{netip.MustParseAddr("10.255.255.53")}
	block := "ip daddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 192.0.0.0/24, 168.63.129.16/32 } reject"
	dns := "ip daddr { 10.255.255.53 } meta l4proto { tcp, udp } th dport 53 accept"
	if s := n.baseScript(resolver); strings.Contains(s, block) {
		t.Errorf("private networks blocked without block_private_networks:\n%s", s)
	}
	n.blockPrivate = true
	s := n.baseScript(resolver)
	i, j := strings.Index(s, dns), strings.Index(s, block)
	if j < 0 || i < 0 || i > j {
		t.Errorf("want DNS to the host's resolver accepted, then the private ranges rejected:\n%s", s)
	}
	if s := n.baseScript(nil); strings.Contains(s, "dport 53 accept") {
		t.Errorf("a DNS exception without resolvers:\n%s", s)
	}
}

func TestDirectNameservers(t *testing.T) {
	conf, _ := resolvConf([]byte("nameserver 127.0.0.53\nnameserver 10.255.255.53\nnameserver ::1\nsearch x\n"), netip.IPv4Unspecified(), func(netip.Addr) bool { return false })
	got := directNameservers(conf, netip.IPv4Unspecified())
	if want := []netip.Addr{netip.MustParseAddr("10.255.255.53")}; !slices.Equal(got, want) {
		t.Errorf("directNameservers = %v, want %v (conf:\n%s)", got, want, conf)
	}
}

// listing is `nft -j list table` output of nft 1.0.6 (trimmed): one
// sandbox whose elements carry comments, and one element without.
const listing = `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
{"table": {"family": "inet", "name": "hutch_test", "handle": 2}},
{"set": {"family": "inet", "name": "ifaces", "table": "hutch_test", "type": "ifname", "handle": 1,
  "elem": [{"elem": {"val": "hutch0123456789", "comment": "hutch sandbox a"}}, "hutchffffffffff"]}},
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
	if !slices.Equal(st.ifaces, []string{"hutch0123456789", "hutchffffffffff"}) || !slices.Equal(st.dnat, []string{"hutch0123456789"}) {
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
				"flush chain inet hutch_test sandbox_a\ndelete chain inet hutch_test sandbox_a\n"},
		{"only a set element", "b", "hutchffffffffff", "delete element inet hutch_test ifaces { \"hutchffffffffff\" }\n"},
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
	n.blockPrivate = true
	script := n.baseScript([]netip.Addr{netip.MustParseAddr("10.255.255.53")}) + n.addScript(l, netip.MustParseAddr("127.0.0.53"))
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
