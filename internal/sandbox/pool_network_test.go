package sandbox

import (
	"maps"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
)

var pyNetwork = warmKey{"python", warmShape{cpus: 1, memoryMB: 512, network: true}}

// TestWarmPlanNetwork: no network pool at rest; network creates give
// their shape a pool of its own, sized by their rate beside the default
// one, and it is emptied once they stop.
func TestWarmPlanNetwork(t *testing.T) {
	c := newPlanPool(t, 400*time.Millisecond, nil)
	if got := c.plan(0); !maps.Equal(got, map[warmKey]int{pyDefault: 1}) {
		t.Fatalf("at rest: %v, want only the base python sandbox, without a network", got)
	}
	for i := range 60 {
		c.create("python", pyNetwork.shape, time.Duration(i)*500*time.Millisecond)
	}
	peak := c.plan(30 * time.Second)
	if peak[pyDefault] != 1 || peak[pyNetwork] < 2 {
		t.Errorf("2 network creates/s: %v, want the base sandbox and more than one with a network", peak)
	}
	if idle := c.plan(30*time.Second + warmIdleAfter + time.Second); !maps.Equal(idle, map[warmKey]int{pyDefault: 1}) {
		t.Errorf("idle: %v, want the network pool gone", idle)
	}
}

// TestWarmShapeNetwork: a network sandbox serves only network creates,
// and a sandbox without one only creates without.
func TestWarmShapeNetwork(t *testing.T) {
	tests := []struct {
		name string
		pool warmKey
		want warmShape
		fits bool
	}{
		{"network from network", pyNetwork, pyNetwork.shape, true},
		{"smaller network create", pyNetwork, warmShape{cpus: 1, memoryMB: 256, network: true}, true},
		{"network from loopback", pyDefault, pyNetwork.shape, false},
		{"loopback from network", pyNetwork, pyDefault.shape, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manager{pool: newPlanPool(t, time.Second, nil).p}
			w := &warmSandbox{taken: make(chan struct{})}
			m.pool.ready[tt.pool] = []*warmSandbox{w}
			m.pool.targets = map[warmKey]int{tt.pool: 1}
			got, _, fits := m.takeWarm("python", tt.want)
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
			m := &Manager{cfg: cfg}
			if tt.protect != 0 {
				m.ProtectPorts(tt.protect)
			}
			if got := m.gatewayFits(tt.forwarded, tt.env); got != tt.want {
				t.Errorf("gatewayFits(%v, %q) = %v, want %v", tt.forwarded, tt.env, got, tt.want)
			}
		})
	}
}
