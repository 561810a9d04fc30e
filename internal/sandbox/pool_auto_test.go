package sandbox

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testClock is a clock that tests move by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// useClock makes m's pool plan on a test clock.
func useClock(m *Manager) *testClock {
	clk := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m.pool.SetClock(clk.Now)
	return clk
}

// slowBoots makes every boot of rt take at least d (until its context
// ends), and reports how many were under way at most at once.
func slowBoots(rt *runtimetest.Runtime, d time.Duration) (peak func() int32) {
	var now, most atomic.Int32
	rt.BeforeStart(func(ctx context.Context, _ runtime.Spec) error {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return most.Load
}

// burstOfDemand makes the pool see 50 creates of python's default shape
// now, and wakes it.
func burstOfDemand(m *Manager, clk *testClock) {
	m.mu.Lock()
	plan := m.pool.Plan()
	for range 50 {
		plan.Note("python", plan.ShapeOf("python"), clk.Now())
	}
	m.mu.Unlock()
	m.pool.Wake()
}

// poolOf returns the pool stat of image (zero when it has none).
func poolOf(m *Manager, image string) warmpool.Stat {
	for _, st := range m.WarmPool() {
		if st.Image == image {
			return st
		}
	}
	return warmpool.Stat{}
}

// TestWarmPoolAutoFollowsDemand: with no warm_pool, the pool keeps one
// sandbox of the first allowed preset; a burst of creates (simulated on
// the pool's clock) grows it, and once the creates leave the rate window
// it shrinks back to one, the rest destroyed; shutdown leaves nothing.
func TestWarmPoolAutoFollowsDemand(t *testing.T) {
	m, rt, _ := inprocess(t, func(c *config.Config) { c.WarmPoolAuto = true })
	// Refills from now on take at least 200 ms: 50 creates at once read
	// as 10/s, so covering one refill takes at least 5 sandboxes
	// (poolplan.PoissonCover(2)).
	slowBoots(rt, 200*time.Millisecond)
	clk := useClock(m)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pool: %s", m.pool.Describe())
		}
	})
	testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready == 1 }, "the base python sandbox is ready")
	// The base sandbox booted fast: the refills measured are the slow ones.
	m.mu.Lock()
	m.pool.Plan().ForgetRefills()
	m.mu.Unlock()

	burstOfDemand(m, clk)
	testutil.Eventually(t, 30*time.Second, func() bool {
		st := poolOf(m, "python")
		return st.Target >= poolplan.PoissonCover(2, poolplan.MissOdds) && st.Ready == st.Target
	}, "the pool grows to its target")
	if st := poolOf(m, "python"); st.Target > m.cfg.WarmPoolMax {
		t.Errorf("target %d over warm_pool_max %d", st.Target, m.cfg.WarmPoolMax)
	}
	if m.Live() != 0 {
		t.Errorf("pool sandboxes counted live: %d", m.Live())
	}

	clk.Add(poolplan.RateWindow + time.Second)
	m.pool.Wake()
	testutil.Eventually(t, 30*time.Second, func() bool {
		st := poolOf(m, "python")
		return st.Target == 1 && st.Ready == 1 && rt.Running() == 1
	}, "the pool shrinks back to one")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.Running(); n != 0 {
		t.Errorf("%d instances outlived Close", n)
	}
}

// TestWarmPoolAutoShapes: a pool for every shape (issue 46: 3). A create
// larger than the pool boots its own, and the image's pool grows to its
// bound; from then on that create, a smaller one in between and one of
// the default shape are each served by the pool, their limits lowered.
func TestWarmPoolAutoShapes(t *testing.T) {
	m, rt, _ := inprocess(t, func(c *config.Config) { c.WarmPoolAuto = true })
	testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready == 1 }, "the base python sandbox is ready")
	big := api.CreateRequest{Image: "python", CPUs: 2, MemoryMB: 1024}
	create(t, m, big)
	if st := poolOf(m, "python"); st.Claims[warmpool.Misfit] != 1 {
		t.Fatalf("claims = %v, want one create of an unpooled shape", st.Claims)
	}
	atBound := func() bool {
		_, ready, _ := strings.Cut(m.pool.Describe(), "ready ")
		return strings.Contains(ready, "python/2cpu/1024MB:1")
	}
	testutil.Eventually(t, 30*time.Second, atBound, "the pool fills at the new bound")
	hits := uint64(0)
	for _, tt := range []struct {
		req       api.CreateRequest
		cpus, mem uint32
	}{
		{big, 2, 1024},
		{api.CreateRequest{Image: "python", CPUs: 1, MemoryMB: 768}, 1, 768},
		{api.CreateRequest{Image: "python"}, 1, 512},
	} {
		testutil.Eventually(t, 30*time.Second, atBound, "the pool refills at its bound")
		id := create(t, m, tt.req)
		hits++
		if cpus, mem := rt.Instance(id).Limits(); cpus != tt.cpus || mem != tt.mem {
			t.Errorf("create of %d cpus %d MiB got %d cpus %d MiB", tt.cpus, tt.mem, cpus, mem)
		}
		if st := poolOf(m, "python"); st.Claims[warmpool.Hit] != hits {
			t.Errorf("claims = %v, want the create of %d cpus %d MiB served by the pool", st.Claims, tt.cpus, tt.mem)
		}
	}
}

// TestWarmPoolConfigRespected: warm_pool: {} keeps no pool at all, and a
// pinned size holds whatever the demand, while other images follow theirs.
func TestWarmPoolConfigRespected(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		m, rt, _ := inprocess(t, func(c *config.Config) {
			parsed, err := config.Parse([]byte("warm_pool: {}\n"))
			if err != nil {
				t.Fatal(err)
			}
			*c = parsed
		})
		if m.pool != nil || m.WarmPool() != nil {
			t.Fatal("warm_pool: {} made a pool")
		}
		id := create(t, m, api.CreateRequest{Image: "python"})
		create(t, m, api.CreateRequest{Image: "python"})
		if n := len(rt.Instances()); n != 2 || rt.Instance(id) == nil {
			t.Errorf("%d instances for 2 creates without a pool", n)
		}
	})
	t.Run("pinned", func(t *testing.T) {
		m, _, _ := inprocess(t, func(c *config.Config) {
			c.WarmPoolAuto = true
			c.WarmPool = map[string]int{"python": 2}
		})
		clk := useClock(m)
		testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "python").Ready == 2 }, "the pinned pool fills")
		burstOfDemand(m, clk)
		create(t, m, api.CreateRequest{Image: "node"})
		testutil.Eventually(t, 30*time.Second, func() bool { return poolOf(m, "node").Ready == 1 }, "node's pool, sized by demand, fills")
		if st := poolOf(m, "python"); st.Target != 2 {
			t.Errorf("pinned python target %d after a burst of demand, want 2", st.Target)
		}
	})
}

// TestBootBurstQueues: a burst of creates larger than the boot slots never
// fails for lack of time while boots progress: the boot timeout runs from
// each boot's start, not from its create's arrival; boots never exceed the
// slots.
func TestBootBurstQueues(t *testing.T) {
	const slots, creates = 2, 8
	// Each boot takes a third of the boot timeout; the burst as a whole
	// takes longer than it.
	m, rt, _ := inprocessWith(t, func(c *config.Config) {
		c.MaxConcurrentBoots = slots
	}, func(o *Options) { o.BootTimeout = 3 * time.Second })
	peak := slowBoots(rt, time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, creates)
	for range creates {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := m.Create(ctx, api.CreateRequest{Image: "python"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("create in a burst: %v", err)
		}
	}
	if got := peak(); got > slots {
		t.Errorf("%d boots at once, want at most %d", got, slots)
	}
	if m.Live() != creates {
		t.Errorf("Live = %d, want %d", m.Live(), creates)
	}
}
