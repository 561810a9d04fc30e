package netplumb

import (
	"net/netip"
	"testing"
)

func TestResolvConf(t *testing.T) {
	gw := netip.MustParseAddr("10.200.0.1")
	header := "# written by hutch from the host's resolver configuration\n"
	for _, tc := range []struct {
		name, host, want string
		dns              string // "" means no DNAT
	}{
		{"plain IPv4 resolver", "nameserver 10.255.255.53\n", header + "nameserver 10.255.255.53\n", ""},
		{"systemd-resolved stub", "# comment\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch example.internal\n",
			header + "nameserver 10.200.0.1\noptions edns0 trust-ad\nsearch example.internal\n", "127.0.0.53"},
		{"IPv6 dropped, second loopback dropped", "nameserver ::1\nnameserver 127.0.0.1\nnameserver 127.0.1.1\nnameserver 192.0.2.53\n",
			header + "nameserver 10.200.0.1\nnameserver 192.0.2.53\n", "127.0.0.1"},
		{"resolver on one of the host's addresses", "nameserver 192.0.2.2\nnameserver 192.0.2.53\n",
			header + "nameserver 10.200.0.1\nnameserver 192.0.2.53\n", "192.0.2.2"},
		{"nothing usable", "nameserver fd00::53\n; nameserver 1.1.1.1\n", header + "# the host has no IPv4 nameserver: names do not resolve in the sandbox\n", ""},
		{"missing file", "", header + "# the host has no IPv4 nameserver: names do not resolve in the sandbox\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostOwn := func(a netip.Addr) bool { return a == netip.MustParseAddr("192.0.2.2") }
			conf, dns := resolvConf([]byte(tc.host), gw, hostOwn)
			if string(conf) != tc.want {
				t.Errorf("conf =\n%s\nwant\n%s", conf, tc.want)
			}
			if got := ""; dns.IsValid() {
				got = dns.String()
				if got != tc.dns {
					t.Errorf("dns = %s, want %q", got, tc.dns)
				}
			} else if tc.dns != "" {
				t.Errorf("dns = none, want %s", tc.dns)
			}
		})
	}
}
