package sandbox

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

// TestNewWarmPool: a config whose plan never keeps a sandbox makes no
// pool (poolplan.New decides), and the pool of one that does starts at
// the plan's targets.
func TestNewWarmPool(t *testing.T) {
	if p := newWarmPool(&Manager{cfg: config.Config{WarmPool: map[string]int{}}}); p != nil {
		t.Errorf("no pinned size, no automatic pool: %+v, want nil", p)
	}
	p := newWarmPool(&Manager{cfg: config.Config{WarmPool: map[string]int{"python": 2}, DefaultCPUs: 1, DefaultMemoryMB: 512}})
	if p == nil || len(p.targets) != 1 || p.targets[p.keysLocked("python")[0]] != 2 {
		t.Fatalf("pinned python 2: %+v, want a pool of target 2", p)
	}
}

func TestWarmPoolWakeNeverBlocks(t *testing.T) {
	p := newWarmPool(&Manager{cfg: config.Config{WarmPool: map[string]int{"python": 1}}})
	for range 3 {
		p.wake()
	}
	if len(p.kick) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(p.kick))
	}
}
