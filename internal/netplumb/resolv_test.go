package netplumb

import (
	"net/netip"
	"testing"
)

func TestResolvConf(t *testing.T) {
	gw := netip.MustParseAddr("10.200.0.1")
	header := "# written by hutch: the gateway is hutch's resolver\nnameserver 10.200.0.1\n"
	for _, tc := range []struct{ name, host, want string }{
		{"plain resolver", "nameserver 10.255.255.53\n", header},
		{"options and search kept", "# comment\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch example.internal\n",
			header + "options edns0 trust-ad\nsearch example.internal\n"},
		{"comments and junk dropped", "; search evil\n#options x\nsearch\n", header},
		{"missing file", "", header},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(resolvConf([]byte(tc.host), gw)); got != tc.want {
				t.Errorf("conf =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
