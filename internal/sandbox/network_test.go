package sandbox

import (
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
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
			got := rewriteLocalhost([]string{tc.in}, gw, tc.wantPorts)
			if got[0] != tc.want {
				t.Errorf("rewrite(%q) = %q, want %q", tc.in, got[0], tc.want)
			}
			if ports := loopbackPorts([]string{tc.in}); !slices.Equal(ports, tc.wantPorts) {
				t.Errorf("loopbackPorts(%q) = %v, want %v", tc.in, ports, tc.wantPorts)
			}
		})
	}
}

// TestRewriteOnlyForwarded: a URL whose port is not forwarded keeps
// pointing at localhost.
func TestRewriteOnlyForwarded(t *testing.T) {
	gw := netip.MustParseAddr("10.200.0.1")
	got := rewriteLocalhost([]string{"A=http://localhost:8080/,http://127.0.0.1:5432/"}, gw, []uint16{5432})
	if want := "A=http://localhost:8080/,http://10.200.0.1:5432/"; got[0] != want {
		t.Fatalf("rewrite = %q, want %q", got[0], want)
	}
}

func TestGatewayPorts(t *testing.T) {
	env := []string{"A=http://localhost:8080/", "B=http://127.0.0.1:3111/", "C=ws://localhost:49134", "D=http://127.0.0.1:8080/x", "E=plain", "F=postgres://localhost:5432/db"}
	for _, tc := range []struct {
		name             string
		tokens           map[string]string
		forwardable      []int
		network          bool
		want, wantRefuse []uint16
	}{
		{"one user: named and configured ports, never the daemon's", nil, nil, true, []uint16{5432, 8080, 9000}, []uint16{3111, 49134}},
		{"one user with forwardable_ports: only those", nil, []int{5432}, true, []uint16{5432, 9000}, []uint16{3111, 8080, 49134}},
		{"owners: only forwardable_ports and gateway_ports", map[string]string{"alice": "a"}, []int{5432, 3111}, true, []uint16{5432, 9000}, []uint16{3111, 8080, 49134}},
		{"owners without forwardable_ports: gateway_ports", map[string]string{"alice": "a"}, nil, true, []uint16{9000}, []uint16{3111, 5432, 8080, 49134}},
		{"no network: nothing", nil, nil, false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.GatewayPorts = []int{9000}
			cfg.APITokens, cfg.ForwardablePorts = tc.tokens, tc.forwardable
			m := &Manager{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			m.ProtectPorts(3111, 49134)
			got, refused := m.gatewayPorts(&record{ID: "x", Network: tc.network, Env: env})
			if !slices.Equal(got, tc.want) || !slices.Equal(refused, tc.wantRefuse) {
				t.Fatalf("gatewayPorts = %v, refused %v; want %v, refused %v", got, refused, tc.want, tc.wantRefuse)
			}
		})
	}
}
