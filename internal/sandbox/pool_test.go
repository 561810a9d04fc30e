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
	if p == nil {
		t.Fatal("pinned python 2: no pool")
	}
	if st := p.Stats(); len(st) != 1 || st[0].Image != "python" || st[0].Target != 2 || st[0].Ready != 0 {
		t.Fatalf("pinned python 2: %+v, want a pool of target 2", st)
	}
}
