package sandbox

import (
	"maps"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestNewWarmPool(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(*config.Config)
		wantNil    bool
		wantShapes map[string]warmShape
	}{
		{name: "no warm_pool", edit: func(*config.Config) {}, wantNil: true},
		{name: "only zero sizes", edit: func(c *config.Config) { c.WarmPool = map[string]int{"python": 0} }, wantNil: true},
		{
			name:       "default limits",
			edit:       func(c *config.Config) { c.WarmPool = map[string]int{"python": 2, "node": 0} },
			wantShapes: map[string]warmShape{"python": {cpus: 1, memoryMB: 512}},
		},
		{
			name: "per-image caps lower the shape",
			edit: func(c *config.Config) {
				c.DefaultCPUs, c.DefaultMemoryMB = 2, 1024
				c.WarmPool = map[string]int{"python": 1, "node": 1}
				c.PerImageCaps = map[string]config.ImageCaps{"python": {MaxMemoryMB: 256}, "node": {MaxCPUs: 1}}
			},
			wantShapes: map[string]warmShape{"python": {cpus: 2, memoryMB: 256}, "node": {cpus: 1, memoryMB: 1024}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			tt.edit(&cfg)
			p := newWarmPool(cfg)
			if tt.wantNil {
				if p != nil {
					t.Fatalf("newWarmPool = %+v, want nil", p)
				}
				return
			}
			if p == nil {
				t.Fatal("newWarmPool = nil")
			}
			if !maps.Equal(p.shapes, tt.wantShapes) {
				t.Errorf("shapes = %v, want %v", p.shapes, tt.wantShapes)
			}
			for image := range tt.wantShapes {
				if p.targets[image] != cfg.WarmPool[image] {
					t.Errorf("target of %s = %d, want %d", image, p.targets[image], cfg.WarmPool[image])
				}
			}
		})
	}
}

func TestWarmPoolWakeNeverBlocks(t *testing.T) {
	p := newWarmPool(config.Config{WarmPool: map[string]int{"python": 1}})
	for range 3 {
		p.wake()
	}
	if len(p.kick) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(p.kick))
	}
}
