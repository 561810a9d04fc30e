package poolsvc

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

// protecting is a Network whose one protected port is protected.
type protecting struct{ protected uint16 }

func (n protecting) Gateway(string, string, []string) (forward, refused []uint16) { return nil, nil }
func (n protecting) Protected(port uint16) bool                                   { return port != 0 && port == n.protected }
func (n protecting) UseGateway(_ string, env []string, _ []uint16) []string       { return env }

// TestGatewayFits: a pool sandbox's gateway serves a create whose env
// names only ports it forwards or that a boot would not forward either,
// and never once a port it forwards is the daemon's own.
func TestGatewayFits(t *testing.T) {
	tests := []struct {
		name      string
		forwarded []uint16
		env       []string
		protect   uint16
		cfg       func(*config.Config)
		want      bool
	}{
		{name: "no env", forwarded: []uint16{5432}, want: true},
		{name: "a forwarded port", forwarded: []uint16{5432}, env: []string{"DB=postgres://127.0.0.1:5432/db"}, want: true},
		{name: "a port a boot would forward", forwarded: []uint16{5432}, env: []string{"API=http://localhost:8080/"}, want: false},
		{
			name: "a port no boot forwards", env: []string{"API=http://localhost:8080/"}, want: true,
			cfg: func(c *config.Config) { c.ForwardablePorts = []int{5432} },
		},
		{name: "a forwarded port now the daemon's", forwarded: []uint16{3966}, protect: 3966, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			s := Service[int]{Cfg: cfg, Net: protecting{protected: tt.protect}}
			if got := s.gatewayFits(tt.forwarded, tt.env); got != tt.want {
				t.Errorf("gatewayFits(%v, %q) = %v, want %v", tt.forwarded, tt.env, got, tt.want)
			}
		})
	}
}
