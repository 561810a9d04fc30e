package gvisor

// issue 46: restores into containers created ahead. Half of a fresh
// "runsc restore" is a new sandbox's start (the runsc process, the gofer,
// the Sentry's boot): the work of "runsc create", which runsc can do
// before the restore is asked for and then restore into the created
// container (runsc/cmd/restore.go loads a container that exists and calls
// container.Restore on it; one that does not is created first, as here
// before). Everything "runsc create" fixes must be what the restore
// would have had: the container's id, its cgroups, bundle and hostname,
// its spec (which gVisor checks against the checkpoint's) and its network
// namespace. So a container created ahead is made for one checkpoint
// directory, with the spec of the last restore from it under an id of its
// own, and that id becomes the restored sandbox's: the daemon's create
// asks ClaimAhead for it before it names the sandbox. Nothing maps one id
// to another, so teardown, cgroups, Reconcile and the crash watchdog treat
// it as any sandbox of this runtime: one no record keeps is destroyed.
//
// Only sources without a network, volume mounts or reattachment get
// containers ahead: a network's namespace is made per sandbox by the
// daemon when it creates one, and the others are per sandbox too.

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// aheadClaimTTL is how long a claimed container waits for its restore:
// a create that failed before it restores never comes back for it.
const aheadClaimTTL = 5 * time.Minute

// aheadCreateTimeout bounds one "runsc create" ahead.
const aheadCreateTimeout = time.Minute

// ahead is the runtime's containers created ahead, by checkpoint directory.
type ahead struct {
	per, sources int // settings: containers per source, sources kept
	log          *slog.Logger

	mu sync.Mutex
	// srcs, closed and created (how many restores went into a container
	// created ahead) are guarded by mu.
	srcs    map[string]*aheadSource
	closed  bool
	created uint64
	ctx     context.Context // ends the creates under way at Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // creates and discards under way
}

// aheadSource is one checkpoint directory's containers.
type aheadSource struct {
	// shape is the spec of the last restore from it; nil before one.
	shape   *runtime.Spec
	ready   []*created
	claimed map[string]*created
	filling int       // creates under way
	failed  bool      // the last create failed: none until the next restore
	used    time.Time // the last claim, for eviction
}

// created is a container "runsc create" made and nothing started yet.
type created struct {
	spec       runtime.Spec
	dir        string
	p          *stdio // the daemon's ends of the agent's stdio
	stderr     *runtime.TailBuffer
	stderrDone chan struct{}
	claimedAt  time.Time
}

func (a *ahead) init(s Settings, log *slog.Logger) {
	a.per, a.sources, a.log = s.RestoreAhead, s.RestoreAheadSources, log
	if a.log == nil {
		a.log = slog.Default()
	}
	a.srcs = map[string]*aheadSource{}
	a.ctx, a.cancel = context.WithCancel(context.Background())
}

// ClaimAhead is the id of a container created ahead for a restore from
// the checkpoint in dir, taken for the caller, which names the sandbox
// it restores with it; "" when there is none ready. It also marks dir as
// a source worth containers ahead, so that the restore that follows
// (with whatever id) makes some for the next one once it is done.
func (r *Runtime) ClaimAhead(dir string) string {
	a := &r.ahead
	if a.per <= 0 || a.sources <= 0 || dir == "" {
		return ""
	}
	var gone []*created
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ""
	}
	defer func() { // in the background, not in this create's way; Close waits
		if len(gone) > 0 {
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				r.discardAll(gone)
			}()
		}
	}()
	src := a.srcs[dir]
	if src == nil {
		src = &aheadSource{claimed: map[string]*created{}}
		a.srcs[dir] = src
		gone = a.evictLocked(dir)
	}
	now := time.Now()
	src.used = now
	gone = append(gone, src.expired(now)...)
	if len(src.ready) == 0 {
		return ""
	}
	c := src.ready[0]
	src.ready = src.ready[1:]
	c.claimedAt = now
	src.claimed[c.spec.ID] = c
	return c.spec.ID // its restore makes another (restored), not to compete with it
}

// DropAhead destroys the containers created ahead for dir (its snapshot
// is deleted) and forgets it as a source.
func (r *Runtime) DropAhead(dir string) {
	a := &r.ahead
	a.mu.Lock()
	src := a.srcs[dir]
	delete(a.srcs, dir)
	a.mu.Unlock()
	if src != nil {
		r.discardAll(src.all())
	}
}

// AheadRestores is how many restores went into a container created ahead.
func (r *Runtime) AheadRestores() uint64 {
	r.ahead.mu.Lock()
	defer r.ahead.mu.Unlock()
	return r.ahead.created
}

// closeAhead destroys every container created ahead and makes no more.
func (r *Runtime) closeAhead() {
	a := &r.ahead
	a.mu.Lock()
	a.closed = true
	var gone []*created
	for dir, src := range a.srcs {
		gone = append(gone, src.all()...)
		delete(a.srcs, dir)
	}
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait() // each destroys its container once it sees closed
	r.discardAll(gone)
}

// expired takes out of src the containers claimed longer than
// aheadClaimTTL before now, and returns them.
func (src *aheadSource) expired(now time.Time) []*created {
	var gone []*created
	for id, c := range src.claimed {
		if now.Sub(c.claimedAt) > aheadClaimTTL {
			delete(src.claimed, id)
			gone = append(gone, c)
		}
	}
	return gone
}

// all is every container of src.
func (src *aheadSource) all() []*created {
	out := append([]*created(nil), src.ready...)
	for _, c := range src.claimed {
		out = append(out, c)
	}
	return out
}

// evictLocked forgets the least recently claimed sources beyond the
// bound, except keep, and returns their containers; a.mu is held.
func (a *ahead) evictLocked(keep string) []*created {
	var gone []*created
	for len(a.srcs) > a.sources {
		oldest := ""
		for dir, src := range a.srcs {
			if dir != keep && (oldest == "" || src.used.Before(a.srcs[oldest].used)) {
				oldest = dir
			}
		}
		if oldest == "" {
			break
		}
		gone = append(gone, a.srcs[oldest].all()...)
		delete(a.srcs, oldest)
	}
	return gone
}

// takeAhead takes the container claimed for spec's restore from dir:
// nil when there is none, or when its spec is not spec's (it is destroyed
// then, and spec.ID is free for a fresh restore).
func (r *Runtime) takeAhead(ctx context.Context, dir string, spec runtime.Spec) *created {
	if dir == "" {
		return nil
	}
	a := &r.ahead
	a.mu.Lock()
	var c *created
	if src := a.srcs[dir]; src != nil {
		c = src.claimed[spec.ID]
		delete(src.claimed, spec.ID)
	}
	a.mu.Unlock()
	if c == nil {
		return nil
	}
	if !reflect.DeepEqual(c.spec, spec) {
		r.discard(ctx, c)
		return nil
	}
	return c
}

// restored notes a restore of spec from dir: a source's shape is its
// last restore's, and its containers ahead are made up to the bound.
func (r *Runtime) restored(dir string, spec runtime.Spec) {
	a := &r.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	src := a.srcs[dir]
	if src == nil || a.closed {
		return
	}
	src.shape, src.failed = &spec, false
	r.fillLocked(dir, src)
}

// aheadable says whether a container can be made ahead for spec's
// restores: the daemon makes a network, volume mounts and reattachment
// per sandbox.
func aheadable(spec *runtime.Spec) bool {
	return spec != nil && spec.Network == nil && len(spec.Mounts) == 0 && !spec.Reattach
}

// fillLocked starts creates until src has its bound of containers
// ready or being made; a.mu is held.
func (r *Runtime) fillLocked(dir string, src *aheadSource) {
	a := &r.ahead
	for !src.failed && aheadable(src.shape) && len(src.ready)+src.filling < a.per {
		spec := *src.shape
		spec.ID = uuid.NewString()
		spec.Hostname = renamed(src.shape.Hostname, src.shape.ID, spec.ID)
		src.filling++
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			r.fill(dir, spec)
		}()
	}
}

// renamed is hostname, the host name of sandbox old, for sandbox id: the
// daemon's host names carry the first 8 characters of the id.
func renamed(hostname, old, id string) string {
	if len(old) < 8 || len(id) < 8 {
		return hostname
	}
	return strings.Replace(hostname, old[:8], id[:8], 1)
}

// fill creates one container ahead for dir and keeps it, unless the
// source went meanwhile.
func (r *Runtime) fill(dir string, spec runtime.Spec) {
	a := &r.ahead
	ctx, cancel := context.WithTimeout(a.ctx, aheadCreateTimeout)
	defer cancel()
	ctx, span := spans.Start(ctx, "gvisor.ahead", trace.WithAttributes(attribute.String("hutch.sandbox_id", spec.ID)))
	defer span.End()
	c, err := r.createAhead(ctx, spec)
	a.mu.Lock()
	src := a.srcs[dir]
	if src != nil {
		src.filling--
		src.failed = src.failed || err != nil
	}
	keep := err == nil && src != nil && !a.closed && src.shape != nil && sameShape(*src.shape, c.spec)
	if keep {
		src.ready = append(src.ready, c)
	}
	a.mu.Unlock()
	switch {
	case err != nil && a.ctx.Err() == nil:
		span.SetStatus(codes.Error, err.Error())
		a.log.Warn("creating a container ahead for restores", "checkpoint", dir, "err", err)
	case err == nil && !keep:
		r.discard(ctx, c)
	}
}

// sameShape says whether a and b are one source's spec but for their
// ids and host names.
func sameShape(a, b runtime.Spec) bool {
	a.ID, a.Hostname, b.ID, b.Hostname = "", "", "", ""
	return reflect.DeepEqual(a, b)
}

// createAhead makes spec's bundle and runs "runsc create" on it: a
// sandbox whose Sentry and gofer run and wait for a restore.
func (r *Runtime) createAhead(ctx context.Context, spec runtime.Spec) (_ *created, retErr error) {
	if err := r.claim(spec.ID); err != nil {
		return nil, err
	}
	var undo cleanup.Stack
	defer func() { undo.RunUnless(context.WithoutCancel(ctx), &retErr) }()
	undo.Push("releasing the sandbox id", func(context.Context) error { r.forget(spec.ID); return nil })
	dir, p, err := r.bundle(ctx, spec, &undo)
	if err != nil {
		return nil, err
	}
	defer p.closeChilds()
	args := append(r.globalFlags(spec, dir), "create", "--bundle", dir, "--pid-file", filepath.Join(dir, sentryPidFile), spec.ID)
	stderr, stderrDone, err := r.runBoot(ctx, spec.ID, dir, p, "runsc.create", args)
	if err != nil {
		return nil, err
	}
	return &created{spec: spec, dir: dir, p: p, stderr: stderr, stderrDone: stderrDone}, nil
}

// restoreInto restores the checkpoint in dir into c and relinks its
// agent; the container's id is still claimed, and undo gets its teardown.
func (r *Runtime) restoreInto(ctx context.Context, c *created, dir string, undo *cleanup.Stack) (*instance, error) {
	id := c.spec.ID
	undo.Push("tearing down sandbox "+id, func(ctx context.Context) error { return r.teardown(ctx, id) })
	undo.Push("closing the agent's pipes", func(context.Context) error { c.p.closeOurs(); return nil })
	flags := r.globalFlags(c.spec, c.dir)
	ran := phase(ctx, "runsc.restore", attribute.Bool("hutch.ahead", true))
	_, err := r.runscOutput(ctx, id, append(flags, "restore", "--image-path", dir, "--detach", "--bundle", c.dir, id)...)
	ran(err)
	if err != nil {
		return nil, bootError(id, c.dir, err, c.stderr, c.stderrDone)
	}
	inst := newInstance(r, c.spec, flags, c.p, c.stderr, c.stderrDone)
	if err := inst.relinkPhase(ctx, c.dir); err != nil {
		return nil, err
	}
	r.ahead.mu.Lock()
	r.ahead.created++
	r.ahead.mu.Unlock()
	r.ahead.log.Debug("restored into a container created ahead", "sandbox", id)
	return inst, nil
}

// discardAll destroys cs.
func (r *Runtime) discardAll(cs []*created) {
	for _, c := range cs {
		r.discard(context.Background(), c)
	}
}

// discard destroys c and frees its id.
func (r *Runtime) discard(ctx context.Context, c *created) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanup.Timeout)
	defer cancel()
	if err := r.teardown(ctx, c.spec.ID); err != nil {
		r.ahead.log.Warn("destroying a container created ahead", "id", c.spec.ID, "err", err)
	}
	c.p.closeOurs()
	r.forget(c.spec.ID)
}
