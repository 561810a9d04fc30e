// Package warmpool keeps sandboxes booted ahead of demand, per image and
// shape (config warm_pool, warm_pool_auto), so that a create takes one
// instead of waiting for a boot. It holds the queues of booted sandboxes
// (oldest claimed first), the refill loop on the plan of package poolplan
// (the pool furthest below its target first, a backoff after failed
// boots), shedding to make room for creates, the pause and refresh of an
// image's pools, a watcher per waiting sandbox, the claims by result, and
// the stats for /metrics.
//
// The booted thing is the type parameter S; the owner (the core,
// internal/sandbox) boots, checks, resizes and discards it through Core,
// and shares its lock with the pool, because room in the pool is room in
// max_concurrent_sandboxes: the pool's maps and plan are guarded by that
// lock, and Core.Free and Core.Closed are called with it held.
//
// Capacity: pool sandboxes count toward max_concurrent_sandboxes, but
// never at the expense of a create. A create that does not take from the
// pool has it Shed pool sandboxes (or cancel the refill under way) when
// live sandboxes, creates in progress and the pool would exceed the
// limit, and the refill loop boots only into free room.
package warmpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
)

const (
	// roomPoll is how often a refill that has no room (capacity) or is
	// paused looks again.
	roomPoll = time.Second
	// maxBackoff bounds the wait after failed refill boots, which
	// doubles from one second.
	maxBackoff = time.Minute
	// refillDelay is how long the refill waits after a claim: a boot
	// takes a core for a good part of its time, and the claimer's first
	// requests come right after the claim.
	refillDelay = 200 * time.Millisecond
)

// Claim results, the labels of Stat.Claims.
const (
	Hit    = "hit"
	Empty  = "empty" // no pool sandbox was ready
	Misfit = "shape" // the create asked for more, for volumes, or its network could not be given
)

// Core is what the pool asks of its owner.
type Core[S any] interface {
	// Boot boots one sandbox of key's image and shape, ready to be
	// claimed; on failure it leaves nothing behind.
	Boot(ctx context.Context, key poolplan.Key) (S, error)
	// Alive reports whether s still runs.
	Alive(s S) bool
	// Wait blocks until s ends, and returns why (true), or until taken
	// is closed (false).
	Wait(s S, taken <-chan struct{}) (end runtime.End, ended bool)
	// Resize lowers the limits of s, booted with shape, to want's.
	Resize(s S, want, shape poolplan.Shape) error
	// Discard ends s, which left the pool unclaimed, and tears it down
	// in the background; the channel is closed once it is gone.
	Discard(s S, end runtime.End) <-chan struct{}
	// Free is how many more sandboxes max_concurrent_sandboxes admits
	// beside the live ones and the creates in progress; Closed reports
	// whether the owner is shutting down. Both are called with the lock
	// held.
	Free() int
	Closed() bool
	// Built reports whether image is built (or pulled).
	Built(image string) bool
	// ID names s in the log.
	ID(s S) string
}

// Unfit is the error of a claim's adopt when the sandbox cannot serve the
// create: the pool discards it (its end says Detail) and counts a misfit.
type Unfit struct{ Detail string }

func (u *Unfit) Error() string { return u.Detail }

// End is the end of a pool sandbox the pool discards: nobody ever sees
// it, the log does.
func End(detail string) runtime.End {
	return runtime.End{Cause: runtime.CauseRequest, Detail: detail}
}

// Pool is the warm pool of sandboxes S. Its nil value keeps nothing: a
// claim finds it empty, and its other methods do nothing.
type Pool[S any] struct {
	core Core[S]
	mu   sync.Locker
	log  *slog.Logger
	// parallel is how many refill boots run at once.
	parallel int
	// now is the clock of the plan; tests set it (SetClock).
	now func() time.Time
	// kick wakes the refill loop; stop ends it, which closes done once
	// its boots have ended (boots).
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	boots sync.WaitGroup

	// The fields below are guarded by mu.
	plan  *poolplan.Plan
	ready map[poolplan.Key][]*waiting[S]
	// booting are the refill boots under way.
	booting map[*boot[S]]struct{}
	// targets is the latest plan.
	targets map[poolplan.Key]int
	// backoff is the wait after failed refill boots, holdUntil the end of
	// the current one.
	backoff   time.Duration
	holdUntil time.Time
	// paused counts, per image, the image removals under way; a paused
	// image is neither refilled nor claimed from.
	paused map[string]int
	// counts are the claims by image and result (Hit, Empty, Misfit).
	counts map[string]map[string]uint64
}

// waiting is one sandbox waiting in the pool.
type waiting[S any] struct {
	s S
	// taken is closed when the sandbox leaves the pool (claimed or
	// discarded), which ends its watcher.
	taken chan struct{}
}

// boot is a refill boot under way.
type boot[S any] struct {
	key     poolplan.Key
	started time.Time
	cancel  context.CancelFunc
	// cancelled is set (under mu) once cancel was called to make room.
	cancelled bool
	// done is closed once the boot's sandbox is in the pool or
	// discarded; discarded is set by then if it was.
	done      chan struct{}
	discarded *S
}

// Stat is the state of one image's warm pool, for /metrics.
type Stat struct {
	Image string
	// Target is the size planned now (pinned by warm_pool, or sized by
	// demand), over all its shapes; Ready the sandboxes waiting now.
	Target int
	Ready  int
	// Claims counts creates of the image by result: "hit" (took a pool
	// sandbox), "empty" (none was ready), "shape" (asked for more cpus or
	// memory than any of the pool's shapes, for volumes, or for a
	// network the pool could not give).
	Claims map[string]uint64
}

// New is the pool of cfg (warm_pool, warm_pool_auto and their bounds),
// or nil when it never keeps a sandbox. It shares mu with core, runs up
// to parallel refill boots at once and logs to log.
func New[S any](cfg config.Config, core Core[S], mu sync.Locker, log *slog.Logger, parallel int) *Pool[S] {
	plan := poolplan.New(cfg)
	if plan == nil {
		return nil
	}
	p := &Pool[S]{
		core:     core,
		mu:       mu,
		log:      log,
		plan:     plan,
		parallel: max(1, parallel),
		now:      time.Now,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		ready:    map[poolplan.Key][]*waiting[S]{},
		booting:  map[*boot[S]]struct{}{},
		paused:   map[string]int{},
		counts:   map[string]map[string]uint64{},
	}
	p.targets = plan.Targets(p.now(), nil)
	return p
}

// SetClock makes the plan run on now (tests).
func (p *Pool[S]) SetClock(now func() time.Time) {
	p.mu.Lock()
	p.now = now
	p.mu.Unlock()
}

// Plan is the pool's plan, guarded by the shared lock (tests).
func (p *Pool[S]) Plan() *poolplan.Plan { return p.plan }

// Reconfigure sizes the pool to cfg's warm_pool keys live (a config
// reload, issue 41: 4): the next plan fills the pools that grew, and
// discards the ready sandboxes of those that shrank (a boot under way for
// one is discarded when it ends). False for a nil pool: only a restart
// adds a pool to a daemon that started without one.
func (p *Pool[S]) Reconfigure(cfg config.Config) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	p.plan = poolplan.Renew(p.plan, cfg)
	p.mu.Unlock()
	p.Wake()
	return true
}

// Wake makes the refill loop look at the pool now.
func (p *Pool[S]) Wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// wakeAfter wakes the refill loop once d has passed.
func (p *Pool[S]) wakeAfter(d time.Duration) {
	time.AfterFunc(d, p.Wake)
}

// Start starts the pool's refill loop, when there is a pool.
func (p *Pool[S]) Start() {
	if p == nil {
		return
	}
	go p.refill()
	p.Wake()
}

// Claim takes a pool sandbox of image for a create that asks for want,
// or returns false when the create should boot its own. fits reports
// whether the create can be served from the pool at all (no volumes; a
// network the pool can give). adopt makes the taken sandbox the
// caller's: an *Unfit error has the pool discard it and count a misfit;
// any other error counts the claim as empty (adopt tore the sandbox down
// itself). The create counts toward its shape's demand either way.
func (p *Pool[S]) Claim(ctx context.Context, image string, want poolplan.Shape, fits func() bool, adopt func(S) error) (s S, ok bool) {
	if p == nil {
		return s, false
	}
	p.mu.Lock()
	covers := p.plan.Covers(image)
	p.mu.Unlock()
	if !covers {
		return s, false
	}
	if !fits() {
		p.count(image, Misfit)
		return s, false
	}
	p.mu.Lock()
	p.plan.Note(image, want, p.now())
	p.mu.Unlock()
	defer p.wakeAfter(refillDelay)
	for {
		w, shape, fits := p.take(image, want)
		if w == nil {
			p.count(image, map[bool]string{true: Empty, false: Misfit}[fits])
			return s, false
		}
		if !p.core.Alive(w.s) {
			p.core.Discard(w.s, End("ended while in the warm pool"))
			continue
		}
		if want != shape {
			if err := p.core.Resize(w.s, want, shape); err != nil {
				p.log.Warn("applying a create's limits to a warm pool sandbox", "sandbox", p.core.ID(w.s), "err", err)
				p.core.Discard(w.s, End("could not apply the create's limits"))
				p.count(image, Misfit)
				return s, false
			}
		}
		if ctx.Err() != nil {
			// Nobody would learn this sandbox's id.
			p.core.Discard(w.s, End("its create was cancelled"))
			return s, false
		}
		if err := adopt(w.s); err != nil {
			if u := (*Unfit)(nil); errors.As(err, &u) {
				p.core.Discard(w.s, End(u.Detail))
				p.count(image, Misfit)
			} else {
				p.count(image, Empty)
			}
			return s, false
		}
		p.count(image, Hit)
		return w.s, true
	}
}

// take removes from the pool the oldest ready sandbox of image that
// fits want: of want's own shape, else of the smallest larger one; it
// returns nil when there is none. fits reports whether any pool of the
// image (planned or holding sandboxes) could serve want.
func (p *Pool[S]) take(image string, want poolplan.Shape) (w *waiting[S], shape poolplan.Shape, fits bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best poolplan.Key
	found := false
	for _, k := range p.keysLocked(image) {
		if !k.Shape.Fits(want) {
			continue
		}
		fits = true
		if len(p.ready[k]) == 0 || p.paused[image] > 0 {
			continue
		}
		if !found || k.Shape == want || best.Shape != want &&
			(k.Shape.MemoryMB < best.Shape.MemoryMB || k.Shape.MemoryMB == best.Shape.MemoryMB && k.Shape.CPUs < best.Shape.CPUs) {
			best, found = k, true
		}
	}
	if !found {
		return nil, want, fits
	}
	w = p.ready[best][0]
	p.ready[best] = slices.Delete(p.ready[best], 0, 1)
	close(w.taken)
	return w, best.Shape, true
}

// keysLocked lists the pools of image, planned or holding sandboxes, in
// key order; mu must be held.
func (p *Pool[S]) keysLocked(image string) []poolplan.Key {
	var keys []poolplan.Key
	for k, n := range p.targets {
		if k.Image == image && n > 0 {
			keys = append(keys, k)
		}
	}
	for k, l := range p.ready {
		if k.Image == image && len(l) > 0 && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, poolplan.CompareKeys)
	return keys
}

// count counts one create of image with result.
func (p *Pool[S]) count(image, result string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts[image]
	if c == nil {
		c = map[string]uint64{}
		p.counts[image] = c
	}
	c[result]++
}

// readyLocked counts the pool's ready sandboxes, plus the ones booting;
// mu must be held.
func (p *Pool[S]) readyLocked() int {
	n := len(p.booting)
	for _, l := range p.ready {
		n += len(l)
	}
	return n
}

// roomLocked reports whether live sandboxes, creates in progress and the
// pool together leave room under max_concurrent_sandboxes; mu must be
// held.
func (p *Pool[S]) roomLocked() bool {
	return p.overLocked() < 0
}

// overLocked is by how much live sandboxes, creates in progress and the
// pool together reach past max_concurrent_sandboxes; mu must be held.
func (p *Pool[S]) overLocked() int {
	return p.readyLocked() - p.core.Free()
}

// Shed makes room for a create that boots a sandbox of its own (its
// capacity slot is already reserved): while live sandboxes, creates in
// progress and the pool together exceed max_concurrent_sandboxes, it
// discards pool sandboxes, the largest pool first, and at last cancels the
// refill boots under way.
func (p *Pool[S]) Shed() {
	if p == nil {
		return
	}
	var victims []S
	p.mu.Lock()
	for over := p.overLocked(); over > 0; over-- {
		var key poolplan.Key
		found := false
		for k, l := range p.ready {
			if len(l) > 0 && (!found || len(l) > len(p.ready[key]) || len(l) == len(p.ready[key]) && poolplan.CompareKeys(k, key) < 0) {
				key, found = k, true
			}
		}
		if !found {
			for b := range p.booting {
				if !b.cancelled && over > 0 {
					b.cancelled = true
					b.cancel()
					over--
				}
			}
			break
		}
		w := p.ready[key][len(p.ready[key])-1]
		p.ready[key] = p.ready[key][:len(p.ready[key])-1]
		close(w.taken)
		victims = append(victims, w.s)
	}
	p.mu.Unlock()
	for _, s := range victims {
		p.core.Discard(s, End("room was needed for a create"))
	}
}

// refill is the refill loop: it plans the pool (replan), then starts
// refill boots while a pool is short of its target and there is room, up
// to p.parallel at once, until Close; it waits for them then.
func (p *Pool[S]) refill() {
	defer close(p.done)
	defer p.boots.Wait()
	tick := time.NewTicker(poolplan.Every)
	defer tick.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-retry:
		case <-tick.C:
		}
		retry = nil
		p.replan()
		for {
			ctx, b, wait := p.next()
			if b == nil {
				if wait > 0 {
					retry = time.After(wait)
				}
				break
			}
			p.boots.Add(1)
			go func() {
				defer p.boots.Done()
				s, err := p.core.Boot(ctx, b.key)
				cancelled := ctx.Err() != nil
				b.cancel()
				p.add(b, s, err, cancelled)
			}()
		}
	}
}

// replan makes the plan anew: it looks up which of the images it may
// keep are built, sets the targets, and discards the sandboxes of pools
// above theirs (demand fell).
func (p *Pool[S]) replan() {
	p.mu.Lock()
	images := p.plan.Images()
	p.mu.Unlock()
	built := map[string]bool{}
	for _, image := range images {
		built[image] = p.core.Built(image)
	}
	var victims []S
	p.mu.Lock()
	p.targets = p.plan.Targets(p.now(), built)
	for k, l := range p.ready {
		for len(l) > p.targets[k] {
			w := l[len(l)-1]
			l = l[:len(l)-1]
			close(w.taken)
			victims = append(victims, w.s)
		}
		p.ready[k] = l
	}
	p.mu.Unlock()
	for _, s := range victims {
		p.core.Discard(s, End("demand for it fell"))
	}
}

// next picks the pool to refill next: the one furthest below its target,
// when its image is not paused, there is room and fewer than p.parallel
// refills are under way, and records its boot as under way; ctx is the
// boot's, cancelled by b.cancel. wait, when not 0, is when to look again
// (a pool is short but has to wait: no room, paused, or after failures).
func (p *Pool[S]) next() (ctx context.Context, b *boot[S], wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.core.Closed() || len(p.booting) >= p.parallel {
		return nil, nil, 0
	}
	booting := map[poolplan.Key]int{}
	for b := range p.booting {
		booting[b.key]++
	}
	keys := make([]poolplan.Key, 0, len(p.targets))
	for k := range p.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, poolplan.CompareKeys)
	var best poolplan.Key
	bestShort := 0
	for _, k := range keys {
		short := p.targets[k] - len(p.ready[k]) - booting[k]
		if short <= 0 {
			continue
		}
		if p.paused[k.Image] > 0 {
			wait = roomPoll
			continue
		}
		if short > bestShort {
			best, bestShort = k, short
		}
	}
	if bestShort == 0 {
		return nil, nil, wait
	}
	if hold := time.Until(p.holdUntil); hold > 0 {
		return nil, nil, hold
	}
	if !p.roomLocked() {
		return nil, nil, roomPoll
	}
	ctx, cancel := context.WithCancel(context.Background())
	b = &boot[S]{key: best, started: time.Now(), cancel: cancel, done: make(chan struct{})}
	p.booting[b] = struct{}{}
	return ctx, b, 0
}

// add ends a refill boot: its sandbox, if any (err nil), joins the pool,
// unless the owner is closing, the image was paused, the boot was
// cancelled to make room, the room is gone or the pool is full; then it
// is discarded. A failed boot that was not cancelled holds the refills
// back for a backoff that doubles with each failure.
func (p *Pool[S]) add(b *boot[S], s S, err error, cancelled bool) {
	defer p.Wake()
	defer close(b.done)
	p.mu.Lock()
	delete(p.booting, b)
	if err != nil {
		if !cancelled {
			p.backoff = min(max(2*p.backoff, time.Second), maxBackoff)
			p.holdUntil = time.Now().Add(p.backoff)
			p.log.Warn("warm pool refill failed", "pool", b.key.String(), "err", err, "retry_in", p.backoff.String())
		}
		p.mu.Unlock()
		return
	}
	p.backoff = 0
	p.plan.ObserveRefill(time.Since(b.started))
	if p.core.Closed() || p.paused[b.key.Image] > 0 || len(p.ready[b.key]) >= p.targets[b.key] || !p.roomLocked() {
		b.discarded = &s
		p.mu.Unlock()
		p.core.Discard(s, End("not needed any more"))
		return
	}
	w := &waiting[S]{s: s, taken: make(chan struct{})}
	p.ready[b.key] = append(p.ready[b.key], w)
	p.mu.Unlock()
	p.log.Debug("warm pool sandbox ready", "sandbox", p.core.ID(s), "pool", b.key.String())
	go p.watch(b.key, w)
}

// watch discards a pool sandbox that ends while it waits, and has the
// pool refilled.
func (p *Pool[S]) watch(key poolplan.Key, w *waiting[S]) {
	end, ended := p.core.Wait(w.s, w.taken)
	if !ended {
		return
	}
	p.mu.Lock()
	l := p.ready[key]
	i := slices.Index(l, w)
	if i >= 0 {
		p.ready[key] = slices.Delete(l, i, i+1)
		close(w.taken)
	}
	p.mu.Unlock()
	if i < 0 {
		return // claimed or discarded meanwhile
	}
	p.log.Warn("warm pool sandbox ended while waiting", "sandbox", p.core.ID(w.s), "pool", key.String(), "reason", end.Detail)
	p.core.Discard(w.s, end)
	p.Wake()
}

// Pause empties image's pools and keeps them empty until the returned
// resume is called: an image removal calls it so that no pool sandbox
// holds the image. It returns once the discarded sandboxes are gone.
func (p *Pool[S]) Pause(image string) (resume func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	p.paused[image]++
	var boots []*boot[S]
	for b := range p.booting {
		if b.key.Image == image {
			b.cancel()
			boots = append(boots, b)
		}
	}
	victims := p.dropReadyLocked(image, func(S) bool { return true })
	p.mu.Unlock()
	for _, b := range boots {
		<-b.done
		if b.discarded != nil {
			victims = append(victims, *b.discarded)
		}
	}
	for _, s := range victims {
		<-p.core.Discard(s, End("its image is being removed"))
	}
	return func() {
		p.mu.Lock()
		p.paused[image]--
		p.mu.Unlock()
		p.Wake()
	}
}

// Refresh discards image's pool sandboxes that stale reports (booted
// from an image id other than the one just pulled), so that creates get
// the new one; the pool refills from it.
func (p *Pool[S]) Refresh(image string, stale func(S) bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	victims := p.dropReadyLocked(image, stale)
	p.mu.Unlock()
	for _, s := range victims {
		p.core.Discard(s, End("its image was updated"))
	}
	p.Wake()
}

// dropReadyLocked takes image's ready sandboxes that match out of the
// pool and returns them; mu must be held.
func (p *Pool[S]) dropReadyLocked(image string, match func(S) bool) []S {
	var out []S
	for k, l := range p.ready {
		if k.Image != image {
			continue
		}
		p.ready[k] = slices.DeleteFunc(l, func(w *waiting[S]) bool {
			if !match(w.s) {
				return false
			}
			close(w.taken)
			out = append(out, w.s)
			return true
		})
	}
	return out
}

// Close stops the refill loop and discards every pool sandbox with end;
// the owner calls it once it is closed (Core.Closed), and waits for the
// teardowns.
func (p *Pool[S]) Close(end runtime.End) {
	if p == nil {
		return
	}
	close(p.stop)
	p.mu.Lock()
	for b := range p.booting {
		b.cancel()
	}
	p.mu.Unlock()
	<-p.done
	p.mu.Lock()
	var victims []S
	for k := range p.ready {
		victims = append(victims, p.dropReadyLocked(k.Image, func(S) bool { return true })...)
	}
	p.mu.Unlock()
	for _, s := range victims {
		p.core.Discard(s, end)
	}
}

// Stats reports the warm pool of every image that has one planned, holds
// sandboxes or was claimed from, sorted by image; nil without a pool.
func (p *Pool[S]) Stats() []Stat {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	stats := map[string]*Stat{}
	stat := func(image string) *Stat {
		st := stats[image]
		if st == nil {
			st = &Stat{Image: image, Claims: map[string]uint64{Hit: 0, Empty: 0, Misfit: 0}}
			stats[image] = st
		}
		return st
	}
	for k, n := range p.targets {
		if n > 0 {
			stat(k.Image).Target += n
		}
	}
	for k, l := range p.ready {
		if len(l) > 0 {
			stat(k.Image).Ready += len(l)
		}
	}
	for image, counts := range p.counts {
		st := stat(image)
		for k, v := range counts {
			st.Claims[k] = v
		}
	}
	out := make([]Stat, 0, len(stats))
	for _, st := range stats {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}

// Describe is the pool's state in one line, for a failing test's log.
func (p *Pool[S]) Describe() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ready := map[string]int{}
	for k, l := range p.ready {
		ready[k.String()] = len(l)
	}
	return fmt.Sprintf("targets %v, refill %s, %d booting, backoff %s, hold until %s, ready %v",
		p.targets, p.plan.RefillTime(), len(p.booting), p.backoff, p.holdUntil.Format(time.StampMilli), ready)
}
