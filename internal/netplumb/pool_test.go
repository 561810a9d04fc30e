package netplumb

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCheckPool(t *testing.T) {
	for _, tc := range []struct {
		pool string
		want string // substring of the error; "" means valid
	}{
		{"10.200.0.0/16", ""},
		{"172.30.0.0/30", ""},
		{"100.64.0.0/10", ""},
		{"10.200.0.1/16", "host bits set (did you mean 10.200.0.0/16?)"},
		{"10.0.0.0/31", "between /8 and /30"},
		{"11.0.0.0/7", "host bits set"},
		{"8.0.0.0/7", "between /8 and /30"},
		{"127.0.0.0/16", "reserved range 127.0.0.0/8"},
		{"169.254.0.0/24", "reserved range 169.254.0.0/16"},
		{"224.0.0.0/8", "reserved range"},
		{"fd00::/64", "not an IPv4 prefix"},
	} {
		err := CheckPool(netip.MustParsePrefix(tc.pool))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckPool(%s) = %v, want nil", tc.pool, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckPool(%s) = %v, want an error containing %q", tc.pool, err, tc.want)
		}
	}
	if err := CheckPool(netip.Prefix{}); err == nil {
		t.Error("CheckPool(zero prefix) = nil")
	}
}

func TestPoolFree(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	for _, tc := range []struct {
		name string
		pool string
		used []string
		want string // "" means none free
	}{
		{"empty host", "10.200.0.0/16", nil, "10.200.0.0/30"},
		{"first taken by a gateway address", "10.200.0.0/16", []string{"10.200.0.1/32", "10.200.0.0/30"}, "10.200.0.4/30"},
		{"gap after two", "10.200.0.0/16", []string{"10.200.0.0/30", "10.200.0.4/30", "10.200.0.12/30"}, "10.200.0.8/30"},
		{"unsorted and overlapping", "10.200.0.0/16", []string{"10.200.0.4/30", "10.200.0.0/29", "10.200.0.6/32"}, "10.200.0.8/30"},
		{"wider route covers the start", "10.200.0.0/16", []string{"10.200.0.0/24"}, "10.200.1.0/30"},
		{"route covering everything", "10.200.0.0/16", []string{"10.0.0.0/8"}, ""},
		{"outside addresses ignored", "10.200.0.0/16", []string{"192.168.1.0/24", "10.199.255.255/32", "10.201.0.0/30"}, "10.200.0.0/30"},
		{"single block pool full", "10.200.0.0/30", []string{"10.200.0.2/32"}, ""},
		{"last block left", "10.200.0.0/29", []string{"10.200.0.0/30"}, "10.200.0.4/30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var used []netip.Prefix
			for _, u := range tc.used {
				used = append(used, p(u))
			}
			got, ok := pool{p(tc.pool)}.free(used)
			if tc.want == "" {
				if ok {
					t.Fatalf("free = %s, want none", got)
				}
				return
			}
			if !ok || got != p(tc.want) {
				t.Fatalf("free = %s, %v; want %s", got, ok, tc.want)
			}
		})
	}
}

func TestSubnetAddrs(t *testing.T) {
	gw, sb := subnetAddrs(netip.MustParsePrefix("10.200.3.8/30"))
	if gw.String() != "10.200.3.9" || sb.String() != "10.200.3.10" {
		t.Fatalf("subnetAddrs = %s, %s", gw, sb)
	}
	if n := (pool{netip.MustParsePrefix("10.200.0.0/16")}).size(); n != 16384 {
		t.Fatalf("size of a /16 = %d, want 16384", n)
	}
}

func TestSortedPorts(t *testing.T) {
	got := sortedPorts([]uint16{8080, 0, 80, 8080, 443})
	want := []uint16{80, 443, 8080}
	if len(got) != len(want) {
		t.Fatalf("sortedPorts = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sortedPorts = %v, want %v", got, want)
		}
	}
}
