package warmpool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fake is a booted sandbox of the fake core.
type fake struct {
	id    string
	key   poolplan.Key
	dead  chan struct{} // closed when it ends on its own
	gone  chan struct{} // closed when it is discarded
	end   runtime.End   // its discard's end, once gone
	limit poolplan.Shape
}

// fakeCore boots fakes; its fields after mu are guarded by mu, the lock
// it shares with the pool (free and closed included).
type fakeCore struct {
	mu sync.Mutex
	// free is the room Free reports; closed what Closed does.
	free   int
	closed bool
	// failBoots makes Boot fail; failResize makes Resize fail.
	failBoots  bool
	failResize bool
	// booted are every fake Boot returned, discarded those Discard got.
	booted    []*fake
	discarded []*fake
	built     map[string]bool
	n         int
}

func newFakeCore() *fakeCore { return &fakeCore{free: 100} }

func (c *fakeCore) Boot(ctx context.Context, key poolplan.Key) (*fake, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failBoots {
		return nil, errors.New("injected boot failure")
	}
	c.n++
	f := &fake{id: fmt.Sprintf("sb-%d", c.n), key: key, dead: make(chan struct{}), gone: make(chan struct{}), limit: key.Shape}
	c.booted = append(c.booted, f)
	return f, nil
}

func (c *fakeCore) Alive(f *fake) bool {
	select {
	case <-f.dead:
		return false
	default:
		return true
	}
}

func (c *fakeCore) Wait(f *fake, taken <-chan struct{}) (runtime.End, bool) {
	select {
	case <-taken:
		return runtime.End{}, false
	case <-f.dead:
		return runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory"}, true
	}
}

func (c *fakeCore) Resize(f *fake, want, shape poolplan.Shape) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failResize {
		return errors.New("injected resize failure")
	}
	f.limit = want
	return nil
}

func (c *fakeCore) Discard(f *fake, end runtime.End) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.discarded, f) {
		f.end = end
		c.discarded = append(c.discarded, f)
		close(f.gone)
	}
	return f.gone
}

func (c *fakeCore) Free() int    { return c.free }
func (c *fakeCore) Closed() bool { return c.closed }

func (c *fakeCore) Built(image string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built[image]
}

func (c *fakeCore) ID(f *fake) string { return f.id }

// discards are the fakes discarded so far.
func (c *fakeCore) discards() []*fake {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.discarded)
}

// boots counts the fakes booted so far.
func (c *fakeCore) boots() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.booted)
}

var (
	pyDefault = poolplan.Key{Image: "python", Shape: poolplan.Shape{CPUs: 1, MemoryMB: 512}}
	pyLarge   = poolplan.Key{Image: "python", Shape: poolplan.Shape{CPUs: 2, MemoryMB: 1024}}
	pyNetwork = poolplan.Key{Image: "python", Shape: poolplan.Shape{CPUs: 1, MemoryMB: 512, Network: true}}
)

// pinned is a config that pins python's pool at n, of pyDefault's shape.
func pinned(n int) config.Config {
	return config.Config{WarmPool: map[string]int{"python": n}, DefaultCPUs: 1, DefaultMemoryMB: 512, MaxConcurrentSandboxes: 100}
}

func newPool(t *testing.T, cfg config.Config, c *fakeCore, parallel int) *Pool[*fake] {
	t.Helper()
	p := New[*fake](cfg, c, &c.mu, slog.New(slog.NewTextHandler(io.Discard, nil)), parallel)
	if p == nil {
		t.Fatal("no pool")
	}
	return p
}

// start runs p's refill loop until the test ends.
func start(t *testing.T, p *Pool[*fake]) {
	p.Start()
	t.Cleanup(func() { p.Close(End("test over")) })
}

func statOf(p *Pool[*fake], image string) Stat {
	for _, st := range p.Stats() {
		if st.Image == image {
			return st
		}
	}
	return Stat{}
}

// put adds ready fakes of key to p, as refills would, and plans key for
// at least as many.
func put(p *Pool[*fake], c *fakeCore, key poolplan.Key, n int) []*fake {
	var out []*fake
	for range n {
		f, _ := c.Boot(context.Background(), key)
		p.mu.Lock()
		p.ready[key] = append(p.ready[key], &waiting[*fake]{s: f, taken: make(chan struct{})})
		p.targets[key] = max(p.targets[key], len(p.ready[key]))
		p.mu.Unlock()
		out = append(out, f)
	}
	return out
}

func yes() bool { return true }

func adoptAll(*fake) error { return nil }

func TestNewFollowsThePlan(t *testing.T) {
	if p := New[*fake](config.Config{WarmPool: map[string]int{}}, newFakeCore(), &sync.Mutex{}, slog.Default(), 1); p != nil {
		t.Errorf("warm_pool: {} without the automatic pool made a pool")
	}
	p := newPool(t, pinned(2), newFakeCore(), 1)
	if len(p.targets) != 1 || p.targets[pyDefault] != 2 {
		t.Errorf("targets %v, want %s: 2", p.targets, pyDefault)
	}
}

func TestWakeNeverBlocks(t *testing.T) {
	p := newPool(t, pinned(1), newFakeCore(), 1)
	for range 3 {
		p.Wake()
	}
	if len(p.kick) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(p.kick))
	}
}

// TestRefillToThePlan: the loop boots each pool up to its target and no
// further, with the pool's shape; a claimed sandbox is replaced.
func TestRefillToThePlan(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(3), c, 2)
	start(t, p)
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 3 }, "the pool fills to 3")
	if st := statOf(p, "python"); st.Target != 3 {
		t.Errorf("target %d, want 3", st.Target)
	}
	c.mu.Lock()
	for _, f := range c.booted {
		if f.key != pyDefault {
			t.Errorf("booted %s, want %s", f.key, pyDefault)
		}
	}
	c.mu.Unlock()
	f, ok := p.Claim(context.Background(), "python", pyDefault.Shape, yes, adoptAll)
	if !ok || f == nil {
		t.Fatal("claim from a full pool missed")
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 3 }, "the pool refills")
	if n := c.boots(); n != 4 {
		t.Errorf("%d boots for a pool of 3 and one claim, want 4", n)
	}
}

// TestClaimByShape: a create takes a sandbox of its own shape, else the
// smallest larger one (resized to its limits); a network sandbox serves
// only network creates and the other way round.
func TestClaimByShape(t *testing.T) {
	t.Run("network", func(t *testing.T) {
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
				c := newFakeCore()
				p := newPool(t, config.Default(), c, 1)
				p.targets = map[poolplan.Key]int{}
				w := put(p, c, tt.pool, 1)[0]
				got, _, fits := p.take("python", tt.want)
				if fits != tt.fits || (got != nil && got.s == w) != tt.fits {
					t.Errorf("take %+v from %s: took %v, fits %v; want %v", tt.want, tt.pool, got != nil, fits, tt.fits)
				}
			})
		}
	})
	t.Run("smallest larger", func(t *testing.T) {
		c := newFakeCore()
		p := newPool(t, pinned(1), c, 1)
		def := put(p, c, pyDefault, 1)[0]
		large := put(p, c, pyLarge, 1)[0]
		want := poolplan.Shape{CPUs: 1, MemoryMB: 768}
		got, ok := p.Claim(context.Background(), "python", want, yes, adoptAll)
		if !ok || got != large || got.limit != want {
			t.Errorf("claim of %+v: %+v %v, want the large sandbox resized", want, got, ok)
		}
		got, ok = p.Claim(context.Background(), "python", pyDefault.Shape, yes, adoptAll)
		if !ok || got != def || got.limit != pyDefault.Shape {
			t.Errorf("claim of the default shape: %+v %v, want the default sandbox as it is", got, ok)
		}
		if st := statOf(p, "python"); st.Claims[Hit] != 2 || st.Claims[Empty] != 0 || st.Claims[Misfit] != 0 {
			t.Errorf("claims %v, want 2 hits", st.Claims)
		}
	})
}

// TestClaimMisses: each way a claim misses is counted by its reason, and
// a sandbox that cannot serve the create is discarded, never handed out.
func TestClaimMisses(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(1), c, 1)
	ctx := context.Background()
	if _, ok := p.Claim(ctx, "node", pyDefault.Shape, yes, adoptAll); ok || len(p.Stats()) != 1 {
		t.Errorf("an image without a pool: claimed %v, stats %+v", ok, p.Stats())
	}
	if _, ok := p.Claim(ctx, "python", pyDefault.Shape, func() bool { return false }, adoptAll); ok {
		t.Error("a create that does not fit was served")
	}
	if _, ok := p.Claim(ctx, "python", pyLarge.Shape, yes, adoptAll); ok {
		t.Error("a create larger than every pool was served")
	}
	if _, ok := p.Claim(ctx, "python", pyDefault.Shape, yes, adoptAll); ok {
		t.Error("a claim from an empty pool was served")
	}
	if st := statOf(p, "python"); st.Claims[Misfit] != 2 || st.Claims[Empty] != 1 || st.Claims[Hit] != 0 {
		t.Fatalf("claims %v, want 2 misfits and 1 empty", st.Claims)
	}

	unfit := put(p, c, pyDefault, 1)[0]
	_, ok := p.Claim(ctx, "python", pyDefault.Shape, yes, func(*fake) error { return &Unfit{Detail: "could not apply the create's network"} })
	if ok || !slices.Contains(c.discards(), unfit) || unfit.end.Detail != "could not apply the create's network" {
		t.Errorf("unfit adopt: claimed %v, discarded with %+v", ok, unfit.end)
	}
	failed := put(p, c, pyDefault, 1)[0]
	if _, ok := p.Claim(ctx, "python", pyDefault.Shape, yes, func(*fake) error { return errors.New("store down") }); ok || slices.Contains(c.discards(), failed) {
		t.Errorf("failed adopt: claimed %v, discarded by the pool %v; want adopt's own teardown", ok, slices.Contains(c.discards(), failed))
	}
	if st := statOf(p, "python"); st.Claims[Misfit] != 3 || st.Claims[Empty] != 2 {
		t.Errorf("claims %v, want 3 misfits and 2 empty", st.Claims)
	}

	dead := put(p, c, pyDefault, 1)[0]
	close(dead.dead)
	live := put(p, c, pyDefault, 1)[0]
	if got, ok := p.Claim(ctx, "python", pyDefault.Shape, yes, adoptAll); !ok || got != live || !slices.Contains(c.discards(), dead) {
		t.Errorf("claim past an ended sandbox: %+v %v, want the live one and the ended one discarded", got, ok)
	}

	c.mu.Lock()
	c.failResize = true
	c.mu.Unlock()
	big := put(p, c, pyLarge, 1)[0]
	if _, ok := p.Claim(ctx, "python", poolplan.Shape{CPUs: 1, MemoryMB: 768}, yes, adoptAll); ok || !slices.Contains(c.discards(), big) {
		t.Errorf("a failed resize: claimed %v, want the sandbox discarded", ok)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	last := put(p, c, pyDefault, 1)[0]
	if _, ok := p.Claim(cancelled, "python", pyDefault.Shape, yes, adoptAll); ok || !slices.Contains(c.discards(), last) {
		t.Errorf("a cancelled create: claimed %v, want the sandbox discarded", ok)
	}
	if st := statOf(p, "python"); st.Claims[Hit] != 1 || st.Claims[Misfit] != 4 || st.Claims[Empty] != 2 {
		t.Errorf("claims %v, want 1 hit, 4 misfits, 2 empty (a cancelled create is not counted)", st.Claims)
	}
}

// TestShedOverBudget: a create that boots its own has the pool discard
// sandboxes, the largest pool first, then cancel refills, until live,
// reserved and pooled fit the limit.
func TestShedOverBudget(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(1), c, 1)
	def := put(p, c, pyDefault, 2)
	large := put(p, c, pyLarge, 1)[0]
	c.mu.Lock()
	c.free = 4
	c.mu.Unlock()
	p.Shed()
	if d := c.discards(); len(d) != 0 {
		t.Fatalf("shed with room discarded %d", len(d))
	}
	c.mu.Lock()
	c.free = 1
	c.mu.Unlock()
	p.Shed()
	if d := c.discards(); len(d) != 2 || !slices.Contains(d, def[0]) || !slices.Contains(d, def[1]) || slices.Contains(d, large) {
		t.Errorf("shed 2 of 3: discarded %v, want the default pool's two %v (the largest first, then the smaller key)", d, def)
	}
	if st := statOf(p, "python"); st.Ready != 1 {
		t.Errorf("%d ready after shedding to 1", st.Ready)
	}

	if _, b, wait := p.next(); b != nil || wait == 0 {
		t.Fatalf("refill without room: boot %v, wait %s; want none, and a look again", b != nil, wait)
	}
	c.mu.Lock()
	c.free = 3
	c.mu.Unlock()
	ctx, b, _ := p.next()
	if b == nil {
		t.Fatal("no refill boot with room")
	}
	c.mu.Lock()
	c.free = 0
	c.mu.Unlock()
	p.Shed()
	if ctx.Err() == nil || !b.cancelled {
		t.Error("shed at the limit did not cancel the refill under way")
	}
	if d := c.discards(); len(d) != 3 {
		t.Errorf("%d discarded, want the last ready sandbox too", len(d))
	}
}

// TestPauseAndResume: a paused image's pools are emptied, neither
// refilled nor claimed from until resumed; Pause returns once the
// sandboxes are gone. Refresh discards only the stale ones.
func TestPauseAndResume(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(2), c, 1)
	start(t, p)
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 2 }, "the pool fills")
	resume := p.Pause("python")
	d := c.discards()
	if len(d) != 2 || d[0].end.Detail != "its image is being removed" {
		t.Fatalf("pause discarded %d (%+v), want 2", len(d), d)
	}
	p.Wake()
	if _, ok := p.Claim(context.Background(), "python", pyDefault.Shape, yes, adoptAll); ok {
		t.Error("claimed from a paused image")
	}
	if _, b, wait := p.next(); b != nil || wait == 0 {
		t.Errorf("a paused image's refill: boot %v, wait %v; want none, and a look again", b != nil, wait)
	}
	if st := statOf(p, "python"); st.Ready != 0 {
		t.Errorf("%d ready while paused", st.Ready)
	}
	resume()
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 2 }, "the pool refills once resumed")

	stale := func(f *fake) bool { return f.id == "sb-3" }
	before := len(c.discards())
	p.Refresh("python", stale)
	d = c.discards()
	if len(d) != before+1 || d[len(d)-1].id != "sb-3" || d[len(d)-1].end.Detail != "its image was updated" {
		t.Errorf("refresh discarded %v, want sb-3 only", d[before:])
	}
}

// TestFailedBootBacksOff: a failed refill boot holds the refills back
// for a second, doubling with each failure up to a minute; a boot that
// succeeds ends the backoff. A boot cancelled to make room is no failure.
func TestFailedBootBacksOff(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(1), c, 1)
	fail := func() {
		t.Helper()
		_, b, _ := p.next()
		if b == nil {
			t.Fatal("no refill boot")
		}
		p.add(b, nil, errors.New("boot failed"), false)
	}
	fail()
	if p.backoff != time.Second {
		t.Errorf("backoff %s after a failure, want 1s", p.backoff)
	}
	if _, b, wait := p.next(); b != nil || wait <= 0 {
		t.Errorf("refill during the backoff: boot %v, wait %s", b != nil, wait)
	}
	for range 10 {
		p.holdUntil = time.Time{}
		fail()
	}
	if p.backoff != maxBackoff {
		t.Errorf("backoff %s after 11 failures, want %s", p.backoff, maxBackoff)
	}
	p.holdUntil = time.Time{}
	_, b, _ := p.next()
	p.add(b, nil, context.Canceled, true)
	if p.backoff != maxBackoff || !p.holdUntil.IsZero() {
		t.Errorf("a cancelled boot changed the backoff: %s", p.backoff)
	}
	_, b, _ = p.next()
	f, _ := c.Boot(context.Background(), b.key)
	p.add(b, f, nil, false)
	if p.backoff != 0 || statOf(p, "python").Ready != 1 {
		t.Errorf("after a successful boot: backoff %s, ready %d", p.backoff, statOf(p, "python").Ready)
	}
}

// TestRefillFailuresWithTheLoop: with boots failing, the loop keeps the
// pool empty and retries; once they succeed, it fills.
func TestRefillFailuresWithTheLoop(t *testing.T) {
	c := newFakeCore()
	c.failBoots = true
	p := newPool(t, pinned(1), c, 1)
	start(t, p)
	testutil.Eventually(t, 10*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.backoff > 0
	}, "a refill fails")
	c.mu.Lock()
	c.failBoots = false
	c.mu.Unlock()
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 1 }, "the pool fills after the backoff")
}

// TestEndedWhileWaiting: a pool sandbox that ends on its own is
// discarded with its end, and the pool refills.
func TestEndedWhileWaiting(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(1), c, 1)
	start(t, p)
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 1 }, "the pool fills")
	c.mu.Lock()
	first := c.booted[0]
	c.mu.Unlock()
	close(first.dead)
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Contains(c.discards(), first) }, "the ended sandbox is discarded")
	if first.end.Cause != runtime.CauseOutOfMemory {
		t.Errorf("discarded with %+v, want its own end", first.end)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 1 && c.boots() == 2 }, "the pool refills")
}

// TestCloseDiscardsAll: Close ends the loop and discards every waiting
// sandbox with the owner's end; a boot that ends once the owner is
// closed is discarded.
func TestCloseDiscardsAll(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(2), c, 1)
	p.Start()
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 2 }, "the pool fills")
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	shutdown := runtime.End{Cause: runtime.CauseShutdown, Detail: "daemon shut down"}
	p.Close(shutdown)
	d := c.discards()
	if len(d) != 2 || d[0].end != shutdown || d[1].end != shutdown {
		t.Errorf("close discarded %+v, want both with the shutdown end", d)
	}
	if st := statOf(p, "python"); st.Ready != 0 {
		t.Errorf("%d ready after Close", st.Ready)
	}
}

// TestStats: per image, the planned target over all shapes, the ready
// sandboxes and every claim result (zero included), sorted by image.
func TestStats(t *testing.T) {
	var nilPool *Pool[*fake]
	if nilPool.Stats() != nil {
		t.Error("a nil pool has stats")
	}
	cfg := pinned(2)
	cfg.WarmPool["node"] = 1
	c := newFakeCore()
	p := newPool(t, cfg, c, 1)
	put(p, c, pyDefault, 1)
	put(p, c, pyLarge, 1)
	p.Claim(context.Background(), "python", pyLarge.Shape, yes, adoptAll)
	p.Claim(context.Background(), "python", pyLarge.Shape, yes, adoptAll)
	st := p.Stats()
	if len(st) != 2 || st[0].Image != "node" || st[1].Image != "python" {
		t.Fatalf("stats %+v, want node then python", st)
	}
	if st[0].Target != 1 || st[0].Ready != 0 || len(st[0].Claims) != 3 || st[0].Claims[Hit] != 0 {
		t.Errorf("node %+v, want target 1, nothing ready, zero claims of each result", st[0])
	}
	if st[1].Target != 3 || st[1].Ready != 1 || st[1].Claims[Hit] != 1 || st[1].Claims[Empty] != 1 {
		t.Errorf("python %+v, want target 3 (2 pinned, 1 large), 1 ready, 1 hit and 1 empty", st[1])
	}
}

// TestReconfigure: a reload that grows the pool fills it, one that shrinks
// it discards the extra ready sandboxes, one that turns it off empties it;
// a nil pool cannot be reconfigured.
func TestReconfigure(t *testing.T) {
	c := newFakeCore()
	p := newPool(t, pinned(1), c, 2)
	start(t, p)
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 1 }, "the pool fills to 1")
	if !p.Reconfigure(pinned(3)) {
		t.Fatal("Reconfigure of a pool = false")
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 3 }, "the pool grows to 3")
	p.Reconfigure(pinned(1))
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := statOf(p, "python")
		return st.Ready == 1 && st.Target == 1 && len(c.discards()) == 2
	}, "the pool shrinks to 1, discarding 2")
	p.Reconfigure(config.Config{WarmPool: map[string]int{}})
	testutil.Eventually(t, 10*time.Second, func() bool { return statOf(p, "python").Ready == 0 && len(c.discards()) == 3 },
		"the pool turned off empties")
	if _, ok := p.Claim(context.Background(), "python", pyDefault.Shape, yes, adoptAll); ok {
		t.Error("a claim from a pool turned off hit")
	}
	if n := c.boots(); n != 3 {
		t.Errorf("%d boots, want 3 (no refill past a shrink)", n)
	}
	var none *Pool[*fake]
	if none.Reconfigure(pinned(1)) {
		t.Error("Reconfigure of a nil pool = true")
	}
}
