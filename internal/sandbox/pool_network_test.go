package sandbox

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
)

var (
	pyDefault = poolplan.Key{Image: "python", Shape: poolplan.Shape{CPUs: 1, MemoryMB: 512}}
	pyNetwork = poolplan.Key{Image: "python", Shape: poolplan.Shape{CPUs: 1, MemoryMB: 512, Network: true}}
)

// TestWarmShapeNetwork: a network sandbox serves only network creates,
// and a sandbox without one only creates without.
func TestWarmShapeNetwork(t *testing.T) {
	tests := []struct {
		name string
		pool poolplan.Key
		want poolplan.Shape
		fits bool
	}{
		{"network from network", pyNetwork, pyNetwork.Shape, true},
		{"smaller network create", pyNetwork, poolplan.Shape{CPUs: 1, MemoryMB: 256, Network: true}, true},
		{"network from loopback", pyDefault, pyNetwork.Shape, false},
		{"loopback from network", pyNetwork, pyDefault.Shape, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manager{cfg: config.Default()}
			m.pool = newWarmPool(m)
			w := &warmSandbox{taken: make(chan struct{})}
			m.pool.ready[tt.pool] = []*warmSandbox{w}
			m.pool.targets = map[poolplan.Key]int{tt.pool: 1}
			got, _, fits := m.pool.take("python", tt.want)
			if fits != tt.fits || (got == w) != tt.fits {
				t.Errorf("take %+v from %s: took %v, fits %v; want %v", tt.want, tt.pool, got != nil, fits, tt.fits)
			}
		})
	}
}

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
			m := &Manager{cfg: cfg, net: &fakeNetwork{protected: tt.protect}}
			if got := gatewayFits(m, tt.forwarded, tt.env); got != tt.want {
				t.Errorf("gatewayFits(%v, %q) = %v, want %v", tt.forwarded, tt.env, got, tt.want)
			}
		})
	}
}
