package sandbox

// The warm pool: sandboxes booted ahead of demand, per image (config
// warm_pool), so that a create takes one instead of waiting for a boot.
//
// A pool sandbox is booted with its pool's shape (cpus, memory and
// whether it has a network: package poolplan sizes the pools,
// pool_network.go) by one background refill loop. Until a create claims it, it belongs to no
// owner, is not listed, is never reaped for idleness and is not in the
// metadata store, so a daemon that crashes never re-adopts it (start-up
// reconciliation destroys it with every other leftover runtime). A create
// fits a pool when it asks for no volumes, for a network exactly when the
// pool has one, and for at most the pool shape's cpus and memory; claiming
// applies its env (the manager keeps env on the host side, so that is
// free), smaller limits (a cgroup update), its egress policy (for a
// network) and its idle timeout, then records it as a sandbox of the
// caller.
//
// Capacity: pool sandboxes count toward max_concurrent_sandboxes, but
// never at the expense of a create. A create that does not take from the
// pool discards pool sandboxes (or cancels the refill under way) when live
// sandboxes, creates in progress and the pool would exceed the limit, and
// the refill loop boots only into free room.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
)

// imageReady is the cache state of a built (or pulled) image.
const imageReady = image.StateReady

const (
	// warmRoomPoll is how often a refill that has no room (capacity) or
	// is paused looks again.
	warmRoomPoll = time.Second
	// warmMaxBackoff bounds the wait after failed refill boots, which
	// doubles from one second.
	warmMaxBackoff = time.Minute
	// warmRefillDelay is how long the refill waits after a claim: a boot
	// takes a core for a good part of its time, and the claimer's first
	// requests come right after the claim.
	warmRefillDelay = 200 * time.Millisecond
)

// Pool miss reasons, the result label of WarmPoolStat counts.
const (
	warmHit    = "hit"
	warmEmpty  = "empty" // no pool sandbox was ready
	warmMisfit = "shape" // the create asked for more, for volumes, or its network could not be given
)

// warmPool is the manager's pool: the pools' sandboxes and refills, on
// the plan of package poolplan. Its maps and plan are guarded by
// Manager.mu, which it shares with the core because room in the pool is
// room in max_concurrent_sandboxes.
type warmPool struct {
	m *Manager
	// parallel is how many refill boots run at once.
	parallel int
	// now is the clock of the plan; tests set it.
	now func() time.Time
	// kick wakes the refill loop; stop ends it, which closes done once
	// its boots have ended (boots).
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	boots sync.WaitGroup

	// The fields below are guarded by Manager.mu.
	plan  *poolplan.Plan
	ready map[poolplan.Key][]*warmSandbox
	// booting are the refill boots under way.
	booting map[*warmBoot]struct{}
	// targets is the latest plan.
	targets map[poolplan.Key]int
	// backoff is the wait after failed refill boots, holdUntil the end of
	// the current one.
	backoff   time.Duration
	holdUntil time.Time
	// paused counts, per image, the image removals under way; a paused
	// image is neither refilled nor claimed from.
	paused map[string]int
	// counts are the claims by image and result (warmHit, warmEmpty,
	// warmMisfit).
	counts map[string]map[string]uint64
}

// warmSandbox is one sandbox waiting in the pool.
type warmSandbox struct {
	sb *sandbox
	// taken is closed when the sandbox leaves the pool (claimed or
	// discarded), which ends its watcher.
	taken chan struct{}
}

// warmBoot is a refill boot under way.
type warmBoot struct {
	key     poolplan.Key
	started time.Time
	cancel  context.CancelFunc
	// cancelled is set (under Manager.mu) once cancel was called to make
	// room.
	cancelled bool
	// done is closed once the boot's sandbox is in the pool or discarded;
	// discarded is set by then if it was.
	done      chan struct{}
	discarded *sandbox
}

// WarmPoolStat is the state of one image's warm pool, for /metrics.
type WarmPoolStat struct {
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

// newWarmPool builds m's pool, of its config (warm_pool, warm_pool_auto
// and their bounds), or nil when it never keeps a sandbox.
func newWarmPool(m *Manager) *warmPool {
	plan := poolplan.New(m.cfg)
	if plan == nil {
		return nil
	}
	p := &warmPool{
		m:        m,
		plan:     plan,
		parallel: max(1, bootSlotsOf(m.cfg)-1),
		now:      time.Now,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		ready:    map[poolplan.Key][]*warmSandbox{},
		booting:  map[*warmBoot]struct{}{},
		paused:   map[string]int{},
		counts:   map[string]map[string]uint64{},
	}
	p.targets = plan.Targets(p.now(), nil)
	return p
}

// wake makes the refill loop look at the pool now.
func (p *warmPool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// wakeAfter wakes the refill loop once d has passed.
func (p *warmPool) wakeAfter(d time.Duration) {
	time.AfterFunc(d, p.wake)
}

// start starts the pool's refill loop, when there is a pool.
func (p *warmPool) start() {
	if p == nil {
		return
	}
	go p.refill()
	p.wake()
}

// claim takes a pool sandbox for a create whose request and resolved
// limits are given, or returns nil when the create should boot its own.
// The sandbox it returns is recorded as the caller's, with req's name,
// env, limits, egress policy and life terms, and still has to be
// registered. The create
// counts toward its shape's demand either way.
func (p *warmPool) claim(ctx context.Context, req api.CreateRequest, cpus, mem uint32, t terms) *sandbox {
	if p == nil || !p.plan.Covers(req.Image) {
		return nil
	}
	m := p.m
	// Volumes are mounted at boot: no pool sandbox has them. A network
	// is pooled (pool_network.go) when the claim can give it the create's
	// policy and gateway.
	if len(req.Volumes) > 0 || req.Network && !p.networkFits(req.Env) {
		p.count(req.Image, warmMisfit)
		return nil
	}
	want := poolplan.Shape{CPUs: cpus, MemoryMB: mem, Network: req.Network}
	m.mu.Lock()
	p.plan.Note(req.Image, want, p.now())
	m.mu.Unlock()
	defer p.wakeAfter(warmRefillDelay)
	for {
		w, shape, fits := p.take(req.Image, want)
		if w == nil {
			p.count(req.Image, map[bool]string{true: warmEmpty, false: warmMisfit}[fits])
			return nil
		}
		sb := w.sb
		if !warmAlive(sb) {
			p.discard(sb, poolEnd("ended while in the warm pool"))
			continue
		}
		if want != shape {
			if err := resizeWarm(sb, cpus, mem, shape); err != nil {
				m.log.Warn("applying a create's limits to a warm pool sandbox", "sandbox", sb.rec.ID, "err", err)
				p.discard(sb, poolEnd("could not apply the create's limits"))
				p.count(req.Image, warmMisfit)
				return nil
			}
		}
		if ctx.Err() != nil {
			// Nobody would learn this sandbox's id.
			p.discard(sb, poolEnd("its create was cancelled"))
			return nil
		}
		// Nobody else sees sb until it is registered.
		rec := &sb.rec
		rec.Owner, rec.Env = auth.OwnerFrom(ctx), req.Env
		rec.CPUs, rec.MemoryMB = cpus, mem
		t.apply(rec)
		rec.CreatedAt = time.Now().UTC()
		if rec.Network {
			if err := p.claimNetwork(ctx, sb, req.Egress); err != nil {
				// Fail closed: the sandbox may not keep a policy other
				// than the create's.
				m.log.Warn("applying a create's network to a warm pool sandbox", "sandbox", rec.ID, "err", err)
				p.discard(sb, poolEnd("could not apply the create's network"))
				p.count(req.Image, warmMisfit)
				return nil
			}
		}
		sb.baseEnv = baseEnv(sb.user, sb.image, rec.Env)
		sb.touch()
		if err := m.admit(sb); err != nil {
			m.log.Error("admitting a warm pool sandbox", "sandbox", rec.ID, "err", err)
			p.count(req.Image, warmEmpty)
			return nil
		}
		p.count(req.Image, warmHit)
		trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("hutch.warm_pool_hit", true))
		m.log.Debug("sandbox taken from the warm pool", "sandbox", rec.ID, "image", rec.Image)
		return sb
	}
}

// warmAlive reports whether a pool sandbox's runtime and agent still run.
func warmAlive(sb *sandbox) bool {
	inst, ac := sb.conn()
	select {
	case <-inst.Done():
		return false
	case <-ac.Done():
		return false
	default:
		return true
	}
}

// resizeWarm applies a create's smaller limits to a pool sandbox.
func resizeWarm(sb *sandbox, cpus, mem uint32, shape poolplan.Shape) error {
	inst, _ := sb.conn()
	r, ok := inst.(runtime.Resizer)
	if !ok {
		return errNoResize
	}
	if cpus == shape.CPUs {
		cpus = 0
	}
	if mem == shape.MemoryMB {
		mem = 0
	}
	return r.Resize(cpus, mem)
}

// errNoResize is the claim failure of a runtime that cannot change limits.
var errNoResize = errors.New("the runtime cannot change a running sandbox's limits")

// take removes from the pool the oldest ready sandbox of image that
// fits want: of want's own shape, else of the smallest larger one; it
// returns nil when there is none. fits reports whether any pool of the
// image (planned or holding sandboxes) could serve want.
func (p *warmPool) take(image string, want poolplan.Shape) (w *warmSandbox, shape poolplan.Shape, fits bool) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
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
// key order; m.mu must be held.
func (p *warmPool) keysLocked(image string) []poolplan.Key {
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
func (p *warmPool) count(image, result string) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	c := p.counts[image]
	if c == nil {
		c = map[string]uint64{}
		p.counts[image] = c
	}
	c[result]++
}

// discard ends a sandbox that left the pool without being claimed and
// tears it down in the background (Close waits for it).
func (p *warmPool) discard(sb *sandbox, end runtime.End) {
	p.m.stopAsync(sb, end)
}

// readyLocked counts the pool's ready sandboxes, plus the ones booting;
// m.mu must be held.
func (p *warmPool) readyLocked() int {
	n := len(p.booting)
	for _, l := range p.ready {
		n += len(l)
	}
	return n
}

// roomLocked reports whether live sandboxes, creates in progress and the
// pool together leave room under max_concurrent_sandboxes; m.mu must be
// held.
func (p *warmPool) roomLocked() bool {
	return p.overLocked() < 0
}

// overLocked is by how much live sandboxes, creates in progress and the
// pool together reach past max_concurrent_sandboxes; m.mu must be held.
func (p *warmPool) overLocked() int {
	m := p.m
	return m.liveLocked() + m.reserved + p.readyLocked() - m.cfg.MaxConcurrentSandboxes
}

// shed makes room for a create that boots a sandbox of its own (its
// capacity slot is already reserved): while live sandboxes, creates in
// progress and the pool together exceed max_concurrent_sandboxes, it
// discards pool sandboxes, the largest pool first, and at last cancels the
// refill boots under way.
func (p *warmPool) shed() {
	if p == nil {
		return
	}
	var victims []*sandbox
	p.m.mu.Lock()
	for over := p.overLocked(); over > 0; over-- {
		var key poolplan.Key
		found := false
		for k, l := range p.ready {
			if len(l) > 0 && (!found || len(l) > len(p.ready[key]) || len(l) == len(p.ready[key]) && poolplan.CompareKeys(k, key) < 0) {
				key, found = k, true
			}
		}
		if !found {
			for boot := range p.booting {
				if !boot.cancelled && over > 0 {
					boot.cancelled = true
					boot.cancel()
					over--
				}
			}
			break
		}
		w := p.ready[key][len(p.ready[key])-1]
		p.ready[key] = p.ready[key][:len(p.ready[key])-1]
		close(w.taken)
		victims = append(victims, w.sb)
	}
	p.m.mu.Unlock()
	for _, sb := range victims {
		p.discard(sb, poolEnd("room was needed for a create"))
	}
}

// refill is the refill loop: it plans the pool (replan), then starts
// refill boots while a pool is short of its target and there is room, up
// to p.parallel at once, until Close; it waits for them then.
func (p *warmPool) refill() {
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
			ctx, boot, wait := p.next()
			if boot == nil {
				if wait > 0 {
					retry = time.After(wait)
				}
				break
			}
			p.boots.Add(1)
			go func() {
				defer p.boots.Done()
				sb, err := p.boot(ctx, boot.key)
				cancelled := ctx.Err() != nil
				boot.cancel()
				p.add(boot, sb, err, cancelled)
			}()
		}
	}
}

// replan makes the plan anew: it looks up which of the images it may
// keep are built, sets the targets, and discards the sandboxes of pools
// above theirs (demand fell).
func (p *warmPool) replan() {
	m := p.m
	m.mu.Lock()
	images := p.plan.Images()
	m.mu.Unlock()
	built := map[string]bool{}
	for _, image := range images {
		built[image] = m.images.Status(image).State == imageReady
	}
	var victims []*sandbox
	m.mu.Lock()
	p.targets = p.plan.Targets(p.now(), built)
	for k, l := range p.ready {
		for len(l) > p.targets[k] {
			w := l[len(l)-1]
			l = l[:len(l)-1]
			close(w.taken)
			victims = append(victims, w.sb)
		}
		p.ready[k] = l
	}
	m.mu.Unlock()
	for _, sb := range victims {
		p.discard(sb, poolEnd("demand for it fell"))
	}
}

// next picks the pool to refill next: the one furthest below its target,
// when its image is not paused, there is room and fewer than p.parallel
// refills are under way, and records its boot as under way; ctx is the
// boot's, cancelled by boot.cancel. wait, when not 0, is when to look
// again (a pool is short but has to wait: no room, paused, or after
// failures).
func (p *warmPool) next() (ctx context.Context, boot *warmBoot, wait time.Duration) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.m.closed || len(p.booting) >= p.parallel {
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
			wait = warmRoomPoll
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
		return nil, nil, warmRoomPoll
	}
	ctx, cancel := context.WithCancel(withBootPriority(context.Background(), bootForPool))
	boot = &warmBoot{key: best, started: time.Now(), cancel: cancel, done: make(chan struct{})}
	p.booting[boot] = struct{}{}
	return ctx, boot, 0
}

// boot boots one pool sandbox of key's image and shape.
func (p *warmPool) boot(ctx context.Context, key poolplan.Key) (*sandbox, error) {
	m := p.m
	img, release, err := m.ensureImage(ctx, key.Image)
	if err != nil {
		return nil, err
	}
	defer release()
	rec := &record{
		ID:              uuid.NewString(),
		Image:           key.Image,
		ImageID:         img.ID,
		Runtime:         m.rts.Default().Name(),
		CPUs:            key.Shape.CPUs,
		MemoryMB:        key.Shape.MemoryMB,
		Network:         key.Shape.Network,
		IdleTimeoutSecs: m.cfg.DefaultIdleTimeoutSecs,
		CreatedAt:       time.Now().UTC(),
	}
	sb, err := m.bootSandbox(ctx, rec, img, nil)
	if err != nil {
		return nil, err
	}
	if err := sb.transition(Pooled); err != nil {
		p.discard(sb, poolEnd("could not join the pool"))
		return nil, err
	}
	if err := warmUp(ctx, sb); err != nil {
		p.discard(sb, poolEnd("its warm-up exec failed"))
		return nil, err
	}
	return sb, nil
}

// warmUpTimeout bounds the warm-up exec of a pool sandbox.
const warmUpTimeout = 10 * time.Second

// warmUp runs one `true` in a new pool sandbox, as its image's user: the
// first process a sandbox starts costs more than the next ones (gVisor
// sets up a host stub process for the new address space and faults in the
// agent's spawn path), and the pool takes that cost off the create that
// claims the sandbox.
func warmUp(ctx context.Context, sb *sandbox) error {
	areq := &agentv1.ExecRequest{
		Argv:      []string{"true"},
		Env:       sb.env(),
		Workdir:   sb.image.Config.WorkingDir,
		TimeoutMs: warmUpTimeout.Milliseconds(),
	}
	applyUser(areq, sb.user)
	// The exit status does not matter: in an image without true the
	// spawn path has run all the same.
	if _, err := sb.client().Exec(ctx, areq); err != nil {
		return fmt.Errorf("warming up sandbox %s: %w", sb.rec.ID, err)
	}
	return nil
}

// add ends a refill boot: its sandbox, if any, joins the pool, unless
// the daemon is closing, the image was paused, the boot was cancelled to
// make room, the room is gone or the pool is full; then it is discarded.
// A failed boot that was not cancelled holds the refills back for a
// backoff that doubles with each failure.
func (p *warmPool) add(boot *warmBoot, sb *sandbox, err error, cancelled bool) {
	m := p.m
	defer p.wake()
	defer close(boot.done)
	m.mu.Lock()
	delete(p.booting, boot)
	if sb == nil {
		if err != nil && !cancelled {
			p.backoff = min(max(2*p.backoff, time.Second), warmMaxBackoff)
			p.holdUntil = time.Now().Add(p.backoff)
			m.log.Warn("warm pool refill failed", "pool", boot.key.String(), "err", err, "retry_in", p.backoff.String())
		}
		m.mu.Unlock()
		return
	}
	p.backoff = 0
	p.plan.ObserveRefill(time.Since(boot.started))
	if m.closed || p.paused[boot.key.Image] > 0 || len(p.ready[boot.key]) >= p.targets[boot.key] || !p.roomLocked() {
		boot.discarded = sb
		m.mu.Unlock()
		p.discard(sb, poolEnd("not needed any more"))
		return
	}
	w := &warmSandbox{sb: sb, taken: make(chan struct{})}
	p.ready[boot.key] = append(p.ready[boot.key], w)
	m.mu.Unlock()
	m.log.Debug("warm pool sandbox ready", "sandbox", sb.rec.ID, "pool", boot.key.String())
	go p.watch(boot.key, w)
}

// watch discards a pool sandbox that ends while it waits, and has the
// pool refilled.
func (p *warmPool) watch(key poolplan.Key, w *warmSandbox) {
	inst, ac := w.sb.conn()
	select {
	case <-w.taken:
		return
	case <-inst.Done():
	case <-ac.Done():
	}
	p.m.mu.Lock()
	l := p.ready[key]
	i := slices.Index(l, w)
	if i >= 0 {
		p.ready[key] = slices.Delete(l, i, i+1)
		close(w.taken)
	}
	p.m.mu.Unlock()
	if i < 0 {
		return // claimed or discarded meanwhile
	}
	end := endOf(inst, ac)
	p.m.log.Warn("warm pool sandbox ended while waiting", "sandbox", w.sb.rec.ID, "pool", key.String(), "reason", end.Detail)
	p.discard(w.sb, end)
	p.wake()
}

// pauseWarm is the pool's pause of image, for an image removal.
func (m *Manager) pauseWarm(image string) (resume func()) { return m.pool.pause(image) }

// refreshWarm is the pool's refresh of image, for an image pull.
func (m *Manager) refreshWarm(image, imageID string) { m.pool.refresh(image, imageID) }

// pause empties image's pools and keeps them empty until the returned
// resume is called: an image removal calls it so that no pool sandbox
// holds the image. It returns once the discarded sandboxes are gone.
func (p *warmPool) pause(image string) (resume func()) {
	if p == nil {
		return func() {}
	}
	m := p.m
	m.mu.Lock()
	p.paused[image]++
	var boots []*warmBoot
	for boot := range p.booting {
		if boot.key.Image == image {
			boot.cancel()
			boots = append(boots, boot)
		}
	}
	victims := p.dropReadyLocked(image, func(*sandbox) bool { return true })
	m.mu.Unlock()
	for _, boot := range boots {
		<-boot.done
		if boot.discarded != nil {
			victims = append(victims, boot.discarded)
		}
	}
	for _, sb := range victims {
		p.discard(sb, poolEnd("its image is being removed"))
		<-sb.destroyed
	}
	return func() {
		m.mu.Lock()
		p.paused[image]--
		m.mu.Unlock()
		p.wake()
	}
}

// refresh discards image's pool sandboxes booted from another image id
// than imageID (the image was pulled anew), so that creates get the new
// one; the pool refills from it.
func (p *warmPool) refresh(image, imageID string) {
	if p == nil {
		return
	}
	p.m.mu.Lock()
	victims := p.dropReadyLocked(image, func(sb *sandbox) bool { return sb.rec.ImageID != imageID })
	p.m.mu.Unlock()
	for _, sb := range victims {
		p.discard(sb, poolEnd("its image was updated"))
	}
	p.wake()
}

// dropReadyLocked takes image's ready sandboxes that match out of the
// pool and returns them; m.mu must be held.
func (p *warmPool) dropReadyLocked(image string, match func(*sandbox) bool) []*sandbox {
	var out []*sandbox
	for k, l := range p.ready {
		if k.Image != image {
			continue
		}
		p.ready[k] = slices.DeleteFunc(l, func(w *warmSandbox) bool {
			if !match(w.sb) {
				return false
			}
			close(w.taken)
			out = append(out, w.sb)
			return true
		})
	}
	return out
}

// close stops the refill loop and discards every pool sandbox; Close
// calls it after marking the manager closed, and waits for the teardowns.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	close(p.stop)
	p.m.mu.Lock()
	for boot := range p.booting {
		boot.cancel()
	}
	p.m.mu.Unlock()
	<-p.done
	p.m.mu.Lock()
	var victims []*sandbox
	for k := range p.ready {
		victims = append(victims, p.dropReadyLocked(k.Image, func(*sandbox) bool { return true })...)
	}
	p.m.mu.Unlock()
	for _, sb := range victims {
		p.discard(sb, endShutdown)
	}
}

// WarmPool reports the warm pool of every image that has one planned, holds
// sandboxes or was claimed from, sorted by image; nil without a pool.
func (m *Manager) WarmPool() []WarmPoolStat { return m.pool.stats() }

// stats is WarmPool.
func (p *warmPool) stats() []WarmPoolStat {
	if p == nil {
		return nil
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	stats := map[string]*WarmPoolStat{}
	stat := func(image string) *WarmPoolStat {
		st := stats[image]
		if st == nil {
			st = &WarmPoolStat{Image: image, Claims: map[string]uint64{warmHit: 0, warmEmpty: 0, warmMisfit: 0}}
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
	out := make([]WarmPoolStat, 0, len(stats))
	for _, st := range stats {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}
