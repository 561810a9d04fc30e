package sandbox

import (
	"maps"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestNewWarmPool(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		wantNil     bool
		wantTargets map[warmKey]int
		wantBase    string
	}{
		{name: "warm_pool: {}", yaml: "warm_pool: {}\n", wantNil: true},
		{name: "automatic pool off", yaml: "warm_pool_auto: false\n", wantNil: true},
		{name: "only zero sizes, automatic off", yaml: "warm_pool_auto: false\nwarm_pool: {python: 0}\n", wantNil: true},
		{name: "no memory for the automatic pool", yaml: "warm_pool_memory_mb: 10\n", wantNil: true},
		{name: "automatic by default", yaml: "", wantTargets: map[warmKey]int{}, wantBase: "python"},
		{
			// The operator decided for python: no base sandbox of another.
			name:        "a pinned first preset",
			yaml:        "warm_pool: {python: 0}\n",
			wantTargets: map[warmKey]int{},
		},
		{
			name:        "pinned sizes, default limits",
			yaml:        "warm_pool_auto: false\nwarm_pool: {python: 2, node: 0}\n",
			wantTargets: map[warmKey]int{{"python", warmShape{cpus: 1, memoryMB: 512}}: 2},
		},
		{
			name: "per-image caps lower the shape",
			yaml: "warm_pool_auto: false\ndefault_cpus: 2\ndefault_memory_mb: 1024\nwarm_pool: {python: 1, node: 1}\n" +
				"per_image_caps: {python: {max_memory_mb: 256}, node: {max_cpus: 1}}\n",
			wantTargets: map[warmKey]int{{"python", warmShape{cpus: 2, memoryMB: 256}}: 1, {"node", warmShape{cpus: 1, memoryMB: 1024}}: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
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
			if !maps.Equal(p.targets, tt.wantTargets) {
				t.Errorf("targets = %v, want %v", p.targets, tt.wantTargets)
			}
			if p.baseImage != tt.wantBase {
				t.Errorf("base image = %q, want %q", p.baseImage, tt.wantBase)
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

// planClock is the clock of a pool plan test: plans at t0 + d.
type planClock struct {
	t  *testing.T
	p  *warmPool
	t0 time.Time
}

// newPlanPool is an automatic pool of the default config (edited) whose
// images are built and whose refill takes refill, planned on a test clock.
func newPlanPool(t *testing.T, refill time.Duration, edit func(*config.Config)) planClock {
	t.Helper()
	cfg := config.Default()
	if edit != nil {
		edit(&cfg)
	}
	p := newWarmPool(cfg)
	if p == nil {
		t.Fatal("no pool")
	}
	p.built = map[string]bool{"python": true, "node": true}
	p.refill = refill
	return planClock{t: t, p: p, t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// create notes a create of image with shape at t0 + at.
func (c planClock) create(image string, shape warmShape, at time.Duration) {
	c.p.noteLocked(image, shape, c.t0.Add(at))
}

// plan plans at t0 + at.
func (c planClock) plan(at time.Duration) map[warmKey]int {
	return c.p.planLocked(c.t0.Add(at))
}

var (
	pyDefault = warmKey{"python", warmShape{cpus: 1, memoryMB: 512}}
	pyLarge   = warmKey{"python", warmShape{cpus: 2, memoryMB: 1024}}
	nodeSmall = warmKey{"node", warmShape{cpus: 1, memoryMB: 256}}
)

// TestWarmPlanFollowsRate: the automatic pool grows with a steady create
// rate and shrinks back once the creates stop: to the base sandbox of the
// first allowed preset, and to nothing for another image.
func TestWarmPlanFollowsRate(t *testing.T) {
	c := newPlanPool(t, 400*time.Millisecond, nil)
	if got := c.plan(0); !maps.Equal(got, map[warmKey]int{pyDefault: 1}) {
		t.Fatalf("at rest: %v, want the base python sandbox", got)
	}
	// 2 creates/s for 30 s of the default shape, one node create.
	c.create("node", nodeSmall.shape, 0)
	var sizes []int
	for i := range 60 {
		at := time.Duration(i) * 500 * time.Millisecond
		c.create("python", pyDefault.shape, at)
		if i%10 == 9 {
			sizes = append(sizes, c.plan(at)[pyDefault])
		}
	}
	peak := c.plan(30 * time.Second)
	if peak[pyDefault] < 2 {
		t.Errorf("at 2 creates/s with 400 ms refills: %v, want more than one python sandbox", peak)
	}
	if want := poissonCover(2*0.4, warmMissOdds); peak[pyDefault] > want+1 || peak[pyDefault] < want-1 {
		t.Errorf("python target %d at 2 creates/s, want about %d", peak[pyDefault], want)
	}
	for i := 1; i < len(sizes); i++ {
		if sizes[i] < sizes[i-1] {
			t.Errorf("targets under a steady rate went down: %v", sizes)
		}
	}
	if peak[nodeSmall] != 1 {
		t.Errorf("node used once: target %d, want 1", peak[nodeSmall])
	}

	// The creates stop: once they leave the rate window, the default
	// shape keeps its one sandbox.
	after := c.plan(30*time.Second + warmRateWindow + time.Second)
	if after[pyDefault] != 1 || after[nodeSmall] != 1 {
		t.Errorf("a window after the last create: %v, want python 1 and node 1", after)
	}
	// After warmIdleAfter, node's pool is gone; python's base stays.
	idle := c.plan(30*time.Second + warmIdleAfter + time.Second)
	if !maps.Equal(idle, map[warmKey]int{pyDefault: 1}) {
		t.Errorf("idle: %v, want only the base python sandbox", idle)
	}
	if len(c.p.demand) != 0 {
		t.Errorf("idle demand kept: %v", c.p.demand)
	}
}

// TestWarmPlanBounds: warm_pool_max bounds each image, the memory budget
// all of them, the base and the most recent shapes coming first; an image
// keeps pools of its last warmShapesPerImage shapes; an unbuilt image gets
// none.
func TestWarmPlanBounds(t *testing.T) {
	t.Run("max per image", func(t *testing.T) {
		c := newPlanPool(t, time.Second, func(cfg *config.Config) { cfg.WarmPoolMax = 2 })
		for i := range 50 {
			c.create("python", pyDefault.shape, time.Duration(i)*10*time.Millisecond)
			c.create("python", pyLarge.shape, time.Duration(i)*10*time.Millisecond)
		}
		got := c.plan(time.Second)
		if got[pyDefault]+got[pyLarge] != 2 || got[pyDefault] < 1 || got[pyLarge] < 1 {
			t.Errorf("burst of two shapes with warm_pool_max 2: %v, want one each", got)
		}
	})
	t.Run("memory budget", func(t *testing.T) {
		c := newPlanPool(t, time.Second, func(cfg *config.Config) { cfg.WarmPoolMemoryMB = 2 * WarmSandboxCostMB })
		c.create("node", nodeSmall.shape, 0)
		c.create("python", pyLarge.shape, time.Second)
		for i := range 50 {
			c.create("node", nodeSmall.shape, 2*time.Second+time.Duration(i)*10*time.Millisecond)
		}
		got := c.plan(3 * time.Second)
		if !maps.Equal(got, map[warmKey]int{pyDefault: 1, nodeSmall: 1}) {
			t.Errorf("budget of 2 sandboxes: %v, want the base and the most recent shape", got)
		}
	})
	t.Run("shapes per image", func(t *testing.T) {
		c := newPlanPool(t, time.Second, nil)
		for i := range warmShapesPerImage + 1 {
			c.create("node", warmShape{cpus: 1, memoryMB: uint32(256 + i)}, time.Duration(i)*time.Second)
		}
		got := c.plan(10 * time.Second)
		if _, ok := got[warmKey{"node", warmShape{cpus: 1, memoryMB: 256}}]; ok || len(got) != warmShapesPerImage+1 {
			t.Errorf("%d node shapes: %v, want the last %d (and the python base)", warmShapesPerImage+1, got, warmShapesPerImage)
		}
	})
	t.Run("unbuilt image", func(t *testing.T) {
		c := newPlanPool(t, time.Second, nil)
		c.p.built = map[string]bool{}
		c.create("node", nodeSmall.shape, 0)
		if got := c.plan(time.Second); len(got) != 0 {
			t.Errorf("nothing built: %v, want no pool", got)
		}
	})
}

// TestWarmPlanPinned: warm_pool pins the size of the images it names,
// whatever their demand; the other images are still sized by demand.
func TestWarmPlanPinned(t *testing.T) {
	c := newPlanPool(t, 400*time.Millisecond, func(cfg *config.Config) { cfg.WarmPool = map[string]int{"python": 2} })
	for i := range 50 {
		c.create("python", pyDefault.shape, time.Duration(i)*10*time.Millisecond)
		c.create("python", pyLarge.shape, time.Duration(i)*10*time.Millisecond)
	}
	c.create("node", nodeSmall.shape, 0)
	got := c.plan(time.Second)
	if !maps.Equal(got, map[warmKey]int{pyDefault: 2, nodeSmall: 1}) {
		t.Errorf("pinned python 2 under a burst: %v", got)
	}
	if _, ok := c.p.demand["python"]; ok {
		t.Error("demand recorded for a pinned image")
	}
}

func TestPoissonCover(t *testing.T) {
	for _, tt := range []struct {
		mu   float64
		want int
	}{{0, 1}, {0.05, 1}, {0.5, 2}, {1, 3}, {5, 9}} {
		if got := poissonCover(tt.mu, 0.1); got != tt.want {
			t.Errorf("poissonCover(%v) = %d, want %d", tt.mu, got, tt.want)
		}
	}
}
