package sandbox

// The warm pool: sandboxes booted ahead of demand, per image (config
// warm_pool), so that a create takes one instead of waiting for a boot.
//
// A pool sandbox is booted with the image's pool shape (default cpus and
// memory, capped by per_image_caps; no network) by one background refill
// loop, one boot at a time. Until a create claims it, it belongs to no
// owner, is not listed, is never reaped for idleness and is not in the
// metadata store, so a daemon that crashes never re-adopts it (start-up
// reconciliation destroys it with every other leftover runtime). A create
// fits the pool when it asks for no network and for at most the pool
// shape's cpus and memory; claiming applies its env (the manager keeps env
// on the host side, so that is free), smaller limits (a cgroup update) and
// its idle timeout, then records it as a sandbox of the caller.
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
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
)

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
	warmMisfit = "shape" // the create asked for more, or for a network
)

// warmPool is the manager's pool. Its maps are guarded by Manager.mu.
type warmPool struct {
	// targets and shapes are fixed at start: how many sandboxes to keep
	// per image, and the limits they boot with.
	targets map[string]int
	shapes  map[string]warmShape
	// kick wakes the refill loop; stop ends it, which closes done.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	// The fields below are guarded by Manager.mu.
	ready map[string][]*warmSandbox
	// booting is the refill boot under way, nil when none.
	booting *warmBoot
	// paused counts, per image, the image removals under way; a paused
	// image is neither refilled nor claimed from.
	paused map[string]int
	// counts are the claims by image and result (warmHit, warmEmpty,
	// warmMisfit).
	counts map[string]map[string]uint64
}

// warmShape is the limits pool sandboxes of one image boot with.
type warmShape struct {
	cpus, memoryMB uint32
}

// warmSandbox is one sandbox waiting in the pool.
type warmSandbox struct {
	sb *sandbox
	// taken is closed when the sandbox leaves the pool (claimed or
	// discarded), which ends its watcher.
	taken chan struct{}
}

// warmBoot is the refill boot under way.
type warmBoot struct {
	image  string
	cancel context.CancelFunc
	// done is closed once the boot's sandbox is in the pool or discarded;
	// discarded is set by then if it was.
	done      chan struct{}
	discarded *sandbox
}

// WarmPoolStat is the state of one image's warm pool, for /metrics.
type WarmPoolStat struct {
	Image string
	// Target is the configured size; Ready the sandboxes waiting now.
	Target int
	Ready  int
	// Claims counts creates of the image by result: "hit" (took a pool
	// sandbox), "empty" (none was ready), "shape" (asked for more cpus or
	// memory than the pool's, or for a network).
	Claims map[string]uint64
}

// newWarmPool builds the pool of cfg.WarmPool, or nil when it keeps no
// sandbox.
func newWarmPool(cfg config.Config) *warmPool {
	p := &warmPool{
		targets: map[string]int{},
		shapes:  map[string]warmShape{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		ready:   map[string][]*warmSandbox{},
		paused:  map[string]int{},
		counts:  map[string]map[string]uint64{},
	}
	for image, n := range cfg.WarmPool {
		if n <= 0 {
			continue
		}
		p.targets[image] = n
		shape := warmShape{cpus: cfg.DefaultCPUs, memoryMB: cfg.DefaultMemoryMB}
		if caps, ok := cfg.PerImageCaps[image]; ok {
			if caps.MaxCPUs > 0 {
				shape.cpus = min(shape.cpus, caps.MaxCPUs)
			}
			if caps.MaxMemoryMB > 0 {
				shape.memoryMB = min(shape.memoryMB, caps.MaxMemoryMB)
			}
		}
		p.shapes[image] = shape
		p.counts[image] = map[string]uint64{}
	}
	if len(p.targets) == 0 {
		return nil
	}
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

// startWarm starts the pool's refill loop, when there is a pool.
func (m *Manager) startWarm() {
	if m.pool == nil {
		return
	}
	go m.refillWarm()
	m.pool.wake()
}

// claimWarm takes a pool sandbox for a create whose request and resolved
// limits are given, or returns nil when the create should boot its own.
// The sandbox it returns is recorded as the caller's, with req's name,
// env, limits and life terms, and still has to be registered.
func (m *Manager) claimWarm(ctx context.Context, req api.CreateRequest, cpus, mem uint32, t terms) *sandbox {
	p := m.pool
	if p == nil || p.targets[req.Image] == 0 {
		return nil
	}
	shape := p.shapes[req.Image]
	if req.Network || len(req.Volumes) > 0 || cpus > shape.cpus || mem > shape.memoryMB {
		m.countWarm(req.Image, warmMisfit)
		return nil
	}
	defer p.wakeAfter(warmRefillDelay)
	for {
		w := m.takeWarm(req.Image)
		if w == nil {
			m.countWarm(req.Image, warmEmpty)
			return nil
		}
		sb := w.sb
		if !warmAlive(sb) {
			m.discardWarm(sb, poolEnd("ended while in the warm pool"))
			continue
		}
		if cpus != shape.cpus || mem != shape.memoryMB {
			if err := m.resizeWarm(sb, cpus, mem, shape); err != nil {
				m.log.Warn("applying a create's limits to a warm pool sandbox", "sandbox", sb.rec.ID, "err", err)
				m.discardWarm(sb, poolEnd("could not apply the create's limits"))
				m.countWarm(req.Image, warmMisfit)
				return nil
			}
		}
		if ctx.Err() != nil {
			// Nobody would learn this sandbox's id.
			m.discardWarm(sb, poolEnd("its create was cancelled"))
			return nil
		}
		// Nobody else sees sb until it is registered.
		rec := &sb.rec
		rec.Owner, rec.Env = auth.OwnerFrom(ctx), req.Env
		rec.CPUs, rec.MemoryMB = cpus, mem
		t.apply(rec)
		rec.CreatedAt = time.Now().UTC()
		sb.baseEnv = baseEnv(sb.user, sb.image, rec.Env)
		sb.touch()
		if err := m.admit(sb); err != nil {
			m.log.Error("admitting a warm pool sandbox", "sandbox", rec.ID, "err", err)
			m.countWarm(req.Image, warmEmpty)
			return nil
		}
		m.countWarm(req.Image, warmHit)
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
func (m *Manager) resizeWarm(sb *sandbox, cpus, mem uint32, shape warmShape) error {
	inst, _ := sb.conn()
	r, ok := inst.(runtime.Resizer)
	if !ok {
		return errNoResize
	}
	if cpus == shape.cpus {
		cpus = 0
	}
	if mem == shape.memoryMB {
		mem = 0
	}
	return r.Resize(cpus, mem)
}

// errNoResize is the claim failure of a runtime that cannot change limits.
var errNoResize = errors.New("the runtime cannot change a running sandbox's limits")

// takeWarm removes the oldest ready sandbox of image from the pool, or
// returns nil.
func (m *Manager) takeWarm(image string) *warmSandbox {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pool
	if p.paused[image] > 0 || len(p.ready[image]) == 0 {
		return nil
	}
	w := p.ready[image][0]
	p.ready[image] = slices.Delete(p.ready[image], 0, 1)
	close(w.taken)
	return w
}

// countWarm counts one create of image with result.
func (m *Manager) countWarm(image, result string) {
	m.mu.Lock()
	m.pool.counts[image][result]++
	m.mu.Unlock()
}

// discardWarm ends a sandbox that left the pool without being claimed
// and tears it down in the background (Close waits for it).
func (m *Manager) discardWarm(sb *sandbox, end runtime.End) {
	m.stopAsync(sb, end)
}

// readyLocked counts the pool's ready sandboxes, plus the one booting;
// m.mu must be held.
func (p *warmPool) readyLocked() int {
	n := 0
	for _, l := range p.ready {
		n += len(l)
	}
	if p.booting != nil {
		n++
	}
	return n
}

// shedWarm makes room for a create that boots a sandbox of its own (its
// capacity slot is already reserved): while live sandboxes, creates in
// progress and the pool together exceed max_concurrent_sandboxes, it
// discards pool sandboxes, the largest pool first, and at last cancels the
// refill boot under way.
func (m *Manager) shedWarm() {
	p := m.pool
	if p == nil {
		return
	}
	var victims []*sandbox
	m.mu.Lock()
	for over := m.liveLocked() + m.reserved + p.readyLocked() - m.cfg.MaxConcurrentSandboxes; over > 0; over-- {
		image := ""
		for img, l := range p.ready {
			if len(l) > 0 && (image == "" || len(l) > len(p.ready[image]) || len(l) == len(p.ready[image]) && img < image) {
				image = img
			}
		}
		if image == "" {
			if p.booting != nil {
				p.booting.cancel()
			}
			break
		}
		w := p.ready[image][len(p.ready[image])-1]
		p.ready[image] = p.ready[image][:len(p.ready[image])-1]
		close(w.taken)
		victims = append(victims, w.sb)
	}
	m.mu.Unlock()
	for _, sb := range victims {
		m.discardWarm(sb, poolEnd("room was needed for a create"))
	}
}

// refillWarm is the refill loop: it boots one pool sandbox at a time
// while an image is short of its target and there is room, until Close.
func (m *Manager) refillWarm() {
	p := m.pool
	defer close(p.done)
	var backoff time.Duration
	var retry <-chan time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-retry:
		}
		retry = nil
		for {
			ctx, boot, wait := m.nextWarm()
			if boot == nil {
				if wait {
					retry = time.After(max(backoff, warmRoomPoll))
				}
				break
			}
			sb, err := m.bootWarm(ctx, boot.image)
			boot.cancel()
			m.addWarm(boot, sb)
			if err != nil && ctx.Err() == nil {
				backoff = min(max(2*backoff, time.Second), warmMaxBackoff)
				m.log.Warn("warm pool refill failed", "image", boot.image, "err", err, "retry_in", backoff.String())
				retry = time.After(backoff)
				break
			}
			backoff = 0
		}
	}
}

// nextWarm picks the image to refill next: the one furthest below its
// target, when it is not paused and there is room, and records its boot as
// under way; ctx is the boot's, cancelled by boot.cancel. wait reports
// that an image is short but has to wait (no room, or paused).
func (m *Manager) nextWarm() (ctx context.Context, boot *warmBoot, wait bool) {
	p := m.pool
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, false
	}
	images := make([]string, 0, len(p.targets))
	for image := range p.targets {
		images = append(images, image)
	}
	sort.Strings(images)
	best, bestShort := "", 0
	for _, image := range images {
		short := p.targets[image] - len(p.ready[image])
		if short <= 0 {
			continue
		}
		if p.paused[image] > 0 {
			wait = true
			continue
		}
		if short > bestShort {
			best, bestShort = image, short
		}
	}
	if best == "" {
		return nil, nil, wait
	}
	if m.liveLocked()+m.reserved+p.readyLocked() >= m.cfg.MaxConcurrentSandboxes {
		return nil, nil, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.booting = &warmBoot{image: best, cancel: cancel, done: make(chan struct{})}
	return ctx, p.booting, false
}

// bootWarm boots one pool sandbox of image with its pool shape.
func (m *Manager) bootWarm(ctx context.Context, image string) (*sandbox, error) {
	img, release, err := m.ensureImage(ctx, image)
	if err != nil {
		return nil, err
	}
	defer release()
	shape := m.pool.shapes[image]
	rec := &record{
		ID:              uuid.NewString(),
		Image:           image,
		ImageID:         img.ID,
		Runtime:         m.rt.Name(),
		CPUs:            shape.cpus,
		MemoryMB:        shape.memoryMB,
		IdleTimeoutSecs: m.cfg.DefaultIdleTimeoutSecs,
		CreatedAt:       time.Now().UTC(),
	}
	sb, err := m.bootSandbox(ctx, rec, img, nil)
	if err != nil {
		return nil, err
	}
	if err := sb.transition(Pooled); err != nil {
		m.discardWarm(sb, poolEnd("could not join the pool"))
		return nil, err
	}
	if err := warmUp(ctx, sb); err != nil {
		m.discardWarm(sb, poolEnd("its warm-up exec failed"))
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

// addWarm ends a refill boot: its sandbox, if any, joins the pool, unless
// the daemon is closing, the image was paused, the boot was cancelled to
// make room, or the room is gone; then it is discarded.
func (m *Manager) addWarm(boot *warmBoot, sb *sandbox) {
	p := m.pool
	m.mu.Lock()
	p.booting = nil
	if sb == nil {
		m.mu.Unlock()
		close(boot.done)
		return
	}
	if m.closed || p.paused[boot.image] > 0 ||
		m.liveLocked()+m.reserved+p.readyLocked() >= m.cfg.MaxConcurrentSandboxes {
		boot.discarded = sb
		m.mu.Unlock()
		m.discardWarm(sb, poolEnd("not needed any more"))
		close(boot.done)
		return
	}
	w := &warmSandbox{sb: sb, taken: make(chan struct{})}
	p.ready[boot.image] = append(p.ready[boot.image], w)
	m.mu.Unlock()
	close(boot.done)
	m.log.Debug("warm pool sandbox ready", "sandbox", sb.rec.ID, "image", boot.image)
	go m.watchWarm(boot.image, w)
}

// watchWarm discards a pool sandbox that ends while it waits, and has
// the pool refilled.
func (m *Manager) watchWarm(image string, w *warmSandbox) {
	inst, ac := w.sb.conn()
	select {
	case <-w.taken:
		return
	case <-inst.Done():
	case <-ac.Done():
	}
	m.mu.Lock()
	l := m.pool.ready[image]
	i := slices.Index(l, w)
	if i >= 0 {
		m.pool.ready[image] = slices.Delete(l, i, i+1)
		close(w.taken)
	}
	m.mu.Unlock()
	if i < 0 {
		return // claimed or discarded meanwhile
	}
	end := endOf(inst, ac)
	m.log.Warn("warm pool sandbox ended while waiting", "sandbox", w.sb.rec.ID, "image", image, "reason", end.Detail)
	m.discardWarm(w.sb, end)
	m.pool.wake()
}

// pauseWarm empties image's pool and keeps it empty until the returned
// resume is called: an image removal calls it so that no pool sandbox
// holds the image. It returns once the discarded sandboxes are gone.
func (m *Manager) pauseWarm(image string) (resume func()) {
	p := m.pool
	if p == nil || p.targets[image] == 0 {
		return func() {}
	}
	m.mu.Lock()
	p.paused[image]++
	var boot *warmBoot
	if p.booting != nil && p.booting.image == image {
		boot = p.booting
		boot.cancel()
	}
	victims := m.dropReadyLocked(image, func(*sandbox) bool { return true })
	m.mu.Unlock()
	if boot != nil {
		<-boot.done
		if boot.discarded != nil {
			victims = append(victims, boot.discarded)
		}
	}
	for _, sb := range victims {
		m.discardWarm(sb, poolEnd("its image is being removed"))
		<-sb.destroyed
	}
	return func() {
		m.mu.Lock()
		p.paused[image]--
		m.mu.Unlock()
		p.wake()
	}
}

// refreshWarm discards image's pool sandboxes booted from another image
// id than imageID (the image was pulled anew), so that creates get the
// new one; the pool refills from it.
func (m *Manager) refreshWarm(image, imageID string) {
	p := m.pool
	if p == nil || p.targets[image] == 0 {
		return
	}
	m.mu.Lock()
	victims := m.dropReadyLocked(image, func(sb *sandbox) bool { return sb.rec.ImageID != imageID })
	m.mu.Unlock()
	for _, sb := range victims {
		m.discardWarm(sb, poolEnd("its image was updated"))
	}
	p.wake()
}

// dropReadyLocked takes image's ready sandboxes that match out of the
// pool and returns them; m.mu must be held.
func (m *Manager) dropReadyLocked(image string, match func(*sandbox) bool) []*sandbox {
	var out []*sandbox
	p := m.pool
	p.ready[image] = slices.DeleteFunc(p.ready[image], func(w *warmSandbox) bool {
		if !match(w.sb) {
			return false
		}
		close(w.taken)
		out = append(out, w.sb)
		return true
	})
	return out
}

// closeWarm stops the refill loop and discards every pool sandbox; Close
// calls it after marking the manager closed, and waits for the teardowns.
func (m *Manager) closeWarm() {
	p := m.pool
	if p == nil {
		return
	}
	close(p.stop)
	m.mu.Lock()
	if p.booting != nil {
		p.booting.cancel()
	}
	m.mu.Unlock()
	<-p.done
	m.mu.Lock()
	var victims []*sandbox
	for image := range p.ready {
		victims = append(victims, m.dropReadyLocked(image, func(*sandbox) bool { return true })...)
	}
	m.mu.Unlock()
	for _, sb := range victims {
		m.discardWarm(sb, endShutdown)
	}
}

// WarmPool reports the warm pool of every configured image, sorted by
// image; nil without a pool.
func (m *Manager) WarmPool() []WarmPoolStat {
	p := m.pool
	if p == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]WarmPoolStat, 0, len(p.targets))
	for image, target := range p.targets {
		claims := map[string]uint64{warmHit: 0, warmEmpty: 0, warmMisfit: 0}
		for k, v := range p.counts[image] {
			claims[k] = v
		}
		out = append(out, WarmPoolStat{Image: image, Target: target, Ready: len(p.ready[image]), Claims: claims})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}
