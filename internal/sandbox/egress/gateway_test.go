package egress

import (
	"net/netip"
	"slices"
	"testing"
)

func TestRewriteLocalhost(t *testing.T) {
	gw := netip.MustParseAddr("10.200.0.1")
	for _, tc := range []struct {
		name      string
		in, want  string
		wantPorts []uint16
	}{
		{"localhost", "SVC=http://localhost:8080/api", "SVC=http://10.200.0.1:8080/api", []uint16{8080}},
		{"127.0.0.1", "SVC=http://127.0.0.1:3000", "SVC=http://10.200.0.1:3000", []uint16{3000}},
		{"userinfo", "DB=postgres://u:p@localhost:5432/db?sslmode=disable", "DB=postgres://u:p@10.200.0.1:5432/db?sslmode=disable", []uint16{5432}},
		{"IPv6 loopback", "R=redis://[::1]:6379/0", "R=redis://10.200.0.1:6379/0", []uint16{6379}},
		{"case-insensitive host", "S=http://LocalHost:81/", "S=http://10.200.0.1:81/", []uint16{81}},
		{"several in one value", "PEERS=http://localhost:1,ws://127.0.0.1:2/x", "PEERS=http://10.200.0.1:1,ws://10.200.0.1:2/x", []uint16{1, 2}},
		{"no port: unchanged", "S=http://localhost/", "S=http://localhost/", nil},
		{"no scheme: unchanged", "S=localhost:8080", "S=localhost:8080", nil},
		{"other host: unchanged", "S=http://localhost.example.com:80/", "S=http://localhost.example.com:80/", nil},
		{"port 0: unchanged", "S=http://localhost:0/", "S=http://localhost:0/", nil},
		{"port too big: unchanged", "S=http://localhost:70000/", "S=http://localhost:70000/", nil},
		{"six digits: unchanged", "S=http://localhost:123456/", "S=http://localhost:123456/", nil},
		{"name is never rewritten", "http://localhost:1=x", "http://localhost:1=x", nil},
		{"empty value", "EMPTY=", "EMPTY=", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RewriteLocalhost([]string{tc.in}, gw, tc.wantPorts)
			if got[0] != tc.want {
				t.Errorf("rewrite(%q) = %q, want %q", tc.in, got[0], tc.want)
			}
			if ports := LoopbackPorts([]string{tc.in}); !slices.Equal(ports, tc.wantPorts) {
				t.Errorf("LoopbackPorts(%q) = %v, want %v", tc.in, ports, tc.wantPorts)
			}
		})
	}
}

// TestRewriteOnlyForwarded: a URL whose port is not forwarded keeps
// pointing at localhost.
func TestRewriteOnlyForwarded(t *testing.T) {
	gw := netip.MustParseAddr("10.200.0.1")
	got := RewriteLocalhost([]string{"A=http://localhost:8080/,http://127.0.0.1:5432/"}, gw, []uint16{5432})
	if want := "A=http://localhost:8080/,http://10.200.0.1:5432/"; got[0] != want {
		t.Fatalf("rewrite = %q, want %q", got[0], want)
	}
}
