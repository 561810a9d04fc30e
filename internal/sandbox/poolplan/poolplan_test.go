package poolplan

import (
	"maps"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		wantNil     bool
		wantTargets map[Key]int
		wantBase    string
	}{
		{name: "warm_pool: {}", yaml: "warm_pool: {}\n", wantNil: true},
		{name: "automatic pool off", yaml: "warm_pool_auto: false\n", wantNil: true},
		{name: "only zero sizes, automatic off", yaml: "warm_pool_auto: false\nwarm_pool: {python: 0}\n", wantNil: true},
		{name: "no memory for the automatic pool", yaml: "warm_pool_memory_mb: 10\n", wantNil: true},
		{name: "automatic by default", yaml: "", wantTargets: map[Key]int{}, wantBase: "python"},
		{
			// The operator decided for python: no base sandbox of another.
			name:        "a pinned first preset",
			yaml:        "warm_pool: {python: 0}\n",
			wantTargets: map[Key]int{},
		},
		{
			name:        "pinned sizes, default limits",
			yaml:        "warm_pool_auto: false\nwarm_pool: {python: 2, node: 0}\n",
			wantTargets: map[Key]int{{"python", Shape{CPUs: 1, MemoryMB: 512}}: 2},
		},
		{
			name: "per-image caps lower the shape",
			yaml: "warm_pool_auto: false\ndefault_cpus: 2\ndefault_memory_mb: 1024\nwarm_pool: {python: 1, node: 1}\n" +
				"per_image_caps: {python: {max_memory_mb: 256}, node: {max_cpus: 1}}\n",
			wantTargets: map[Key]int{{"python", Shape{CPUs: 2, MemoryMB: 256}}: 1, {"node", Shape{CPUs: 1, MemoryMB: 1024}}: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			p := New(cfg)
			if tt.wantNil {
				if p != nil {
					t.Fatalf("New = %+v, want nil", p)
				}
				return
			}
			if p == nil {
				t.Fatal("New = nil")
			}
			if got := p.Targets(time.Now(), nil); !maps.Equal(got, tt.wantTargets) {
				t.Errorf("targets = %v, want %v", got, tt.wantTargets)
			}
			if p.baseImage != tt.wantBase {
				t.Errorf("base image = %q, want %q", p.baseImage, tt.wantBase)
			}
		})
	}
}

// planClock is the clock of a plan test: plans at t0 + d, with the
// images built.
type planClock struct {
	t     *testing.T
	p     *Plan
	t0    time.Time
	built map[string]bool
}

// newPlan is an automatic plan of the default config (edited) whose
// images are built and whose refill takes refill, on a test clock.
func newPlan(t *testing.T, refill time.Duration, edit func(*config.Config)) planClock {
	t.Helper()
	cfg := config.Default()
	if edit != nil {
		edit(&cfg)
	}
	p := New(cfg)
	if p == nil {
		t.Fatal("no plan")
	}
	p.refill = refill
	return planClock{t: t, p: p, t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), built: map[string]bool{"python": true, "node": true}}
}

// create notes a create of image with shape at t0 + at.
func (c planClock) create(image string, shape Shape, at time.Duration) {
	c.p.Note(image, shape, c.t0.Add(at))
}

// plan plans at t0 + at.
func (c planClock) plan(at time.Duration) map[Key]int {
	return c.p.Targets(c.t0.Add(at), c.built)
}

var (
	pyDefault = Key{"python", Shape{CPUs: 1, MemoryMB: 512}}
	pyLarge   = Key{"python", Shape{CPUs: 2, MemoryMB: 1024}}
	nodeSmall = Key{"node", Shape{CPUs: 1, MemoryMB: 256}}
	pyNetwork = Key{"python", Shape{CPUs: 1, MemoryMB: 512, Network: true}}
)

// TestPlanFollowsRate: the automatic pool grows with a steady create
// rate and shrinks back once the creates stop: to the base sandbox of the
// first allowed preset, and to nothing for another image.
func TestPlanFollowsRate(t *testing.T) {
	c := newPlan(t, 400*time.Millisecond, nil)
	if got := c.plan(0); !maps.Equal(got, map[Key]int{pyDefault: 1}) {
		t.Fatalf("at rest: %v, want the base python sandbox", got)
	}
	// 2 creates/s for 30 s of the default shape, one node create.
	c.create("node", nodeSmall.Shape, 0)
	var sizes []int
	for i := range 60 {
		at := time.Duration(i) * 500 * time.Millisecond
		c.create("python", pyDefault.Shape, at)
		if i%10 == 9 {
			sizes = append(sizes, c.plan(at)[pyDefault])
		}
	}
	peak := c.plan(30 * time.Second)
	if peak[pyDefault] < 2 {
		t.Errorf("at 2 creates/s with 400 ms refills: %v, want more than one python sandbox", peak)
	}
	if want := PoissonCover(2*0.4, MissOdds); peak[pyDefault] > want+1 || peak[pyDefault] < want-1 {
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
	after := c.plan(30*time.Second + RateWindow + time.Second)
	if after[pyDefault] != 1 || after[nodeSmall] != 1 {
		t.Errorf("a window after the last create: %v, want python 1 and node 1", after)
	}
	// After IdleAfter, node's pool is gone; python's base stays.
	idle := c.plan(30*time.Second + IdleAfter + time.Second)
	if !maps.Equal(idle, map[Key]int{pyDefault: 1}) {
		t.Errorf("idle: %v, want only the base python sandbox", idle)
	}
	if len(c.p.demand) != 0 {
		t.Errorf("idle demand kept: %v", c.p.demand)
	}
}

// TestPlanBounds: warm_pool_max bounds each image, the memory budget
// all of them, the base and the most recent pools coming first; an
// image's shapes share one pool per network kind at their bound; an
// unbuilt image gets none.
func TestPlanBounds(t *testing.T) {
	t.Run("max per image", func(t *testing.T) {
		c := newPlan(t, time.Second, func(cfg *config.Config) { cfg.WarmPoolMax = 2 })
		for i := range 50 {
			c.create("python", pyDefault.Shape, time.Duration(i)*10*time.Millisecond)
			c.create("python", pyLarge.Shape, time.Duration(i)*10*time.Millisecond)
		}
		got := c.plan(time.Second)
		if !maps.Equal(got, map[Key]int{pyLarge: 2}) {
			t.Errorf("burst of two shapes with warm_pool_max 2: %v, want 2 of their bound", got)
		}
	})
	t.Run("memory budget", func(t *testing.T) {
		c := newPlan(t, time.Second, func(cfg *config.Config) { cfg.WarmPoolMemoryMB = 2 * SandboxCostMB })
		c.create("node", nodeSmall.Shape, 0)
		c.create("python", pyLarge.Shape, time.Second)
		for i := range 50 {
			c.create("node", nodeSmall.Shape, 2*time.Second+time.Duration(i)*10*time.Millisecond)
		}
		got := c.plan(3 * time.Second)
		if !maps.Equal(got, map[Key]int{pyLarge: 1, nodeSmall: 1}) {
			t.Errorf("budget of 2 sandboxes: %v, want the base (at python's bound) and the most recent pool", got)
		}
	})
	t.Run("a pool for every shape", func(t *testing.T) {
		c := newPlan(t, 100*time.Millisecond, nil)
		c.create("node", Shape{CPUs: 2, MemoryMB: 256}, 0)
		c.create("node", Shape{CPUs: 1, MemoryMB: 1024}, time.Second)
		c.create("node", nodeSmall.Shape, 2*time.Second)
		c.create("node", Shape{CPUs: 1, MemoryMB: 512, Network: true}, 3*time.Second)
		nodeBound, nodeNet := Key{"node", Shape{CPUs: 2, MemoryMB: 1024}}, Key{"node", Shape{CPUs: 1, MemoryMB: 512, Network: true}}
		if got := c.plan(4 * time.Second); !maps.Equal(got, map[Key]int{pyDefault: 1, nodeBound: 1, nodeNet: 1}) {
			t.Errorf("three node shapes and one with a network: %v, want one pool at their bound and one with a network", got)
		}
		// The large shapes age out first: the bound comes down to what is
		// still asked for.
		c.create("node", nodeSmall.Shape, IdleAfter+1500*time.Millisecond)
		got := c.plan(IdleAfter + 2*time.Second)
		if !maps.Equal(got, map[Key]int{pyDefault: 1, nodeSmall: 1, nodeNet: 1}) {
			t.Errorf("after the large shapes went idle: %v, want node's pool at its small shape", got)
		}
	})
	t.Run("unbuilt image", func(t *testing.T) {
		c := newPlan(t, time.Second, nil)
		c.built = map[string]bool{}
		c.create("node", nodeSmall.Shape, 0)
		if got := c.plan(time.Second); len(got) != 0 {
			t.Errorf("nothing built: %v, want no pool", got)
		}
	})
}

// TestPlanPinned: warm_pool pins the size of the images it names,
// whatever their demand; the other images are still sized by demand.
func TestPlanPinned(t *testing.T) {
	c := newPlan(t, 400*time.Millisecond, func(cfg *config.Config) { cfg.WarmPool = map[string]int{"python": 2} })
	for i := range 50 {
		c.create("python", pyDefault.Shape, time.Duration(i)*10*time.Millisecond)
		c.create("python", pyLarge.Shape, time.Duration(i)*10*time.Millisecond)
	}
	c.create("node", nodeSmall.Shape, 0)
	got := c.plan(time.Second)
	if !maps.Equal(got, map[Key]int{pyDefault: 2, nodeSmall: 1}) {
		t.Errorf("pinned python 2 under a burst: %v", got)
	}
	if _, ok := c.p.demand["python"]; ok {
		t.Error("demand recorded for a pinned image")
	}
}

// TestPlanNetwork: no network pool at rest; network creates give
// their shape a pool of its own, sized by their rate beside the default
// one, and it is emptied once they stop.
func TestPlanNetwork(t *testing.T) {
	c := newPlan(t, 400*time.Millisecond, nil)
	if got := c.plan(0); !maps.Equal(got, map[Key]int{pyDefault: 1}) {
		t.Fatalf("at rest: %v, want only the base python sandbox, without a network", got)
	}
	for i := range 60 {
		c.create("python", pyNetwork.Shape, time.Duration(i)*500*time.Millisecond)
	}
	peak := c.plan(30 * time.Second)
	if peak[pyDefault] != 1 || peak[pyNetwork] < 2 {
		t.Errorf("2 network creates/s: %v, want the base sandbox and more than one with a network", peak)
	}
	if idle := c.plan(30*time.Second + IdleAfter + time.Second); !maps.Equal(idle, map[Key]int{pyDefault: 1}) {
		t.Errorf("idle: %v, want the network pool gone", idle)
	}
}

// TestShapeFits: a network sandbox serves only network creates, and one
// without only creates without, of at most its limits.
func TestShapeFits(t *testing.T) {
	for _, tt := range []struct {
		pool, want Shape
		fits       bool
	}{
		{pyNetwork.Shape, pyNetwork.Shape, true},
		{pyNetwork.Shape, Shape{CPUs: 1, MemoryMB: 256, Network: true}, true},
		{pyDefault.Shape, pyNetwork.Shape, false},
		{pyNetwork.Shape, pyDefault.Shape, false},
		{pyDefault.Shape, pyLarge.Shape, false},
		{pyLarge.Shape, pyDefault.Shape, true},
	} {
		if got := tt.pool.Fits(tt.want); got != tt.fits {
			t.Errorf("%+v.Fits(%+v) = %v, want %v", tt.pool, tt.want, got, tt.fits)
		}
	}
}

// TestPlanImages: the images a plan asks the cache state of are the base
// and those with demand, and none without the automatic pool.
func TestPlanImages(t *testing.T) {
	c := newPlan(t, time.Second, nil)
	c.create("node", nodeSmall.Shape, 0)
	got := map[string]bool{}
	for _, image := range c.p.Images() {
		got[image] = true
	}
	if !maps.Equal(got, map[string]bool{"python": true, "node": true}) {
		t.Errorf("Images = %v, want python (the base) and node (asked for)", got)
	}
	pinned := New(config.Config{WarmPool: map[string]int{"python": 1}})
	pinned.Note("node", nodeSmall.Shape, c.t0)
	if images := pinned.Images(); len(images) != 0 || !pinned.Covers("python") || pinned.Covers("node") {
		t.Errorf("pinned only: Images %v, covers python %v, node %v; want none, true, false", images, pinned.Covers("python"), pinned.Covers("node"))
	}
}

func TestPoissonCover(t *testing.T) {
	for _, tt := range []struct {
		mu   float64
		want int
	}{{0, 1}, {0.05, 1}, {0.5, 2}, {1, 3}, {5, 9}} {
		if got := PoissonCover(tt.mu, 0.1); got != tt.want {
			t.Errorf("PoissonCover(%v) = %d, want %d", tt.mu, got, tt.want)
		}
	}
}

// TestRenew: a reload's plan takes the new sizes, keeps the refill times
// and the demand of images still sized by demand (not of one now
// pinned), and a config that keeps nothing gets a plan that keeps nothing.
func TestRenew(t *testing.T) {
	c := newPlan(t, 2*time.Second, nil)
	c.create("node", nodeSmall.Shape, 0)
	c.create("ruby", Shape{CPUs: 1, MemoryMB: 256}, 0)
	node := c.plan(0)[nodeSmall]
	cfg := config.Default()
	cfg.WarmPool = map[string]int{"python": 3, "ruby": 0}
	p := Renew(c.p, cfg)
	if p.RefillTime() != 2*time.Second {
		t.Errorf("refill time %s after a renew, want 2s kept", p.RefillTime())
	}
	got := p.Targets(c.t0, c.built)
	want := map[Key]int{pyDefault: 3, nodeSmall: node}
	if !maps.Equal(got, want) {
		t.Errorf("targets after a renew = %v, want %v (python pinned at 3, node's demand kept, ruby pinned at 0)", got, want)
	}
	off := Renew(p, config.Config{WarmPool: map[string]int{}})
	if off == nil || len(off.Targets(c.t0, c.built)) != 0 || off.Covers("python") {
		t.Errorf("renew to no pool = %+v, want a plan that keeps nothing", off)
	}
	if Renew(nil, cfg) == nil {
		t.Error("renew of no plan = nil")
	}
}
