// Package sandbox is the sandbox manager: the lifecycle state machine
// (create, exec, stop), limits, the idle reaper, the catalog and allowlist
// policy, and the metadata store. It implements functions.Sandboxes and is
// the only place that decides what a request may do.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox/adoptsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/idle"
	"github.com/hutch-dev/hutch/internal/sandbox/slots"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/sandbox/tracing"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// Images is what the manager needs of the image store (image.Store).
type Images interface {
	Ensure(ctx context.Context, name string, install bool) (*image.Image, error)
	Status(name string) api.ImageStatus
	// Catalog is the daemon's one catalog: presets, then custom images.
	Catalog() []image.Entry
	// With lists the catalog images that have a command on their PATH.
	With(command string) []string
}

// Options configure a Manager.
type Options struct {
	Config config.Config
	// Runtimes are where sandboxes start: a create names one or gets the default.
	Runtimes *runtime.Set
	Images   Images
	// AgentPath is the host path of the hutch-agent binary.
	AgentPath string
	// StateDir holds the metadata store (hutch.db).
	StateDir string
	Logger   *slog.Logger
	// BootTimeout bounds a boot from runtime start to agent answer, once it has its slot.
	BootTimeout time.Duration
	// Observer receives measurements (observe.go); nil discards them.
	Observer Observer
	// Events, when set, records what happens to sandboxes (events.go).
	Events *events.Log
	// AgentCallTimeout bounds an agent call without a deadline (agentclient's default: 0).
	AgentCallTimeout time.Duration
	// Volumes keeps the owners' volumes (volumes.go); nil is none.
	Volumes *volumes.Store
	// Network is the sandboxes' networking (network.go, networksvc.Net); nil refuses network: true.
	Network SandboxNetwork
	// OriginOf applies a create's template and snapshot_id to req (snapsvc) and says what the
	// sandbox starts from (nil: its image). Nil refuses both with S302.
	OriginOf func(ctx context.Context, req *api.CreateRequest) (*Origin, error)
	// Reattach: a create's sandbox outlives the daemon, the next adopts it (issue 35).
	Reattach func(meta map[string]string, network bool) bool
}

// Manager owns every sandbox of one daemon.
type Manager struct {
	cfg         config.Config
	allowlist   atomic.Pointer[[]string] // image_allowlist in force (issue 41: 4)
	rts         *runtime.Set
	net         SandboxNetwork // nil: none (network.go)
	images      Images
	agent       string
	log         *slog.Logger
	store       *store
	bootTimeout time.Duration
	callTimeout time.Duration

	// destroying tracks background teardowns, so Close can wait for them.
	destroying tracker
	// creating tracks creates in progress, so Close can wait for them;
	// shutdown is cancelled by Close, which ends their boots.
	creating sync.WaitGroup
	shutdown context.Context
	shut     context.CancelFunc
	// reaper is the idle reaper (package idle, reaper.go).
	reaper *idle.Reaper[*sandbox]
	// trace traces and measures creates, boots and execs (observe.go).
	trace  tracer
	events *events.Log
	// pool is the warm pool (packages warmpool, poolsvc; pool.go); nil without one.
	pool *warmpool.Pool[*sandbox]
	// boots bounds the boots under way (boots.go).
	boots *slots.Slots
	// checkpoints is the checkpoint directory (checkpoint.go); originOf is Options.OriginOf.
	checkpoints string
	originOf    func(context.Context, *api.CreateRequest) (*Origin, error)
	// vols mounts creates' volumes (volumes.go).
	vols     mounter
	reattach func(map[string]string, bool) bool // Options.Reattach (issue 35)
	// hooks are the services' hooks on a stop and a teardown (service.go).
	hooks

	// mu guards the fields below, and the warm pool's maps and plan.
	//
	// The lock order of the core, stated here once: first a sandbox's
	// operation locks, each held across one kind of change to it (op:
	// pause, resume, hibernate, checkpoint; envMu: its env layer;
	// egressMu: its egress policy); then Manager.mu; then a sandbox's
	// mu. Nothing that holds Manager.mu or a sandbox's mu takes an
	// operation lock, and nothing that holds a sandbox's mu takes
	// Manager.mu. The other locks of the package each guard their own
	// book and are taken last. Services (internal/sandbox/<name>svc) hold
	// none of them: they act through Handle, whose methods take what they need.
	mu        sync.Mutex
	sandboxes map[string]*sandbox
	reserved  int // creates in progress, so capacity holds under races
	// owners counts each owner's creates in progress and execs in flight,
	// for the per-owner caps (owners.go).
	owners ownerUse
	closed bool
	// imgUse keeps images from being removed under creates (images.go).
	imgUse imageUse
}

var _ interface {
	Create(context.Context, api.CreateRequest) (api.CreateResponse, error)
	Exec(context.Context, api.ExecRequest) (api.ExecResponse, error)
} = (*Manager)(nil)

// New opens the metadata store, reconciles what a previous daemon left
// behind and starts the idle reaper.
func New(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 30 * time.Second
	}
	st, err := openStore(filepath.Join(opts.StateDir, "hutch.db"))
	if err != nil {
		return nil, err
	}
	shutdown, shut := context.WithCancel(context.Background())
	m := &Manager{
		shutdown:    shutdown,
		shut:        shut,
		callTimeout: opts.AgentCallTimeout,
		cfg:         opts.Config,
		rts:         opts.Runtimes,
		net:         opts.Network,
		images:      opts.Images,
		agent:       opts.AgentPath,
		log:         opts.Logger,
		store:       st,
		bootTimeout: opts.BootTimeout,
		sandboxes:   map[string]*sandbox{},
		events:      opts.Events,
		checkpoints: CheckpointDir(opts.StateDir),
		originOf:    opts.OriginOf,
		vols:        mounter{opts.Volumes},
		reattach:    opts.Reattach,
	}
	m.trace = tracer{obs: opts.Observer, emit: m.emit}
	m.boots = slots.New(bootSlotsOf(opts.Config), int(bootPriorities))
	m.pool, m.reaper = newWarmPool(m), newReaper(m)
	if err := errors.Join(m.reconcile(ctx), clearHibernated(m.checkpoints)); err != nil {
		shut()
		st.close()
		return nil, err
	}
	go m.reaper.Run()
	m.pool.Start()
	return m, nil
}

// reconcile settles what a crashed daemon left: a sandbox's agent stream
// dies with the daemon that held it, so no sandbox of an earlier process
// survives but one started to be reattached (adopt). Records of the other
// live sandboxes become stopped tombstones, their resources destroyed.
func (m *Manager) reconcile(ctx context.Context) error {
	recs, bad, err := m.store.all()
	if err != nil {
		return fmt.Errorf("reading metadata store: %w", err)
	}
	for _, id := range bad {
		m.log.Warn("dropping unreadable sandbox record", "sandbox", id)
		_ = m.store.remove(id)
	}
	now := time.Now()
	retention := time.Duration(m.cfg.StoppedRetentionSecs) * time.Second
	adopted := map[string]bool{}
	for _, r := range recs {
		if r.Stopped && now.Sub(r.StoppedAt) > retention {
			_ = m.store.remove(r.ID)
			continue
		}
		if m.adopt(ctx, r, adopted) { // issue 35
			continue
		}
		if !r.Stopped {
			r.Stopped, r.StopCause, r.StopReason, r.StoppedAt = true, endRestart.Cause, endRestart.Detail, now
			if err := m.store.put(r); err != nil {
				return fmt.Errorf("marking sandbox %s stopped: %w", r.ID, err)
			}
			m.log.Info("sandbox from an earlier daemon destroyed", "sandbox", r.ID)
			m.emit(api.EventSandboxStopped, r.Owner, r.ID, map[string]any{"cause": endRestart.Cause, "reason": endRestart.Detail})
		}
		m.sandboxes[r.ID] = tombstone(r)
	}
	for _, rt := range m.rts.All() {
		destroyed, err := rt.Reconcile(ctx, func(id string) bool { return adopted[id] })
		if err != nil {
			return fmt.Errorf("reconciling the state of runtime %s: %w", rt.Name(), err)
		}
		if len(destroyed) > 0 {
			m.log.Info("destroyed leftover sandboxes", "runtime", rt.Name(), "count", len(destroyed), "ids", destroyed)
		}
	}
	if m.net != nil {
		return m.net.Reconcile(ctx)
	}
	return nil
}

// adopt takes over live record rec's sandbox, which outlived its daemon
// (issue 35), and tells whether it did.
func (m *Manager) adopt(ctx context.Context, rec *record, adopted map[string]bool) bool {
	if rec.Stopped || !m.reattaches(rec) {
		return false
	}
	got, ok := adoptsvc.Adopt(ctx, m.runtimeOf(rec), adoptsvc.Sandbox{ID: rec.ID, Image: rec.Image, ImageID: rec.ImageID, Network: rec.Network, Egress: rec.Egress},
		adoptsvc.Deps{Ensure: m.images.Ensure, Connect: m.connect, Net: m.net, Timeout: m.bootTimeout, Log: m.log})
	if ok {
		sb := newSandbox(rec, got.Inst, got.Agent, got.Image, got.User, m.cfg.MaxConcurrentExecPerSandbox)
		_ = sb.admitted() // Booting to Running
		m.sandboxes[rec.ID], adopted[rec.ID] = sb, true
		go m.watch(sb)
	}
	return ok
}

// Create boots a sandbox, or restores one from a snapshot, after applying
// its template's defaults (Options.OriginOf resolves both). Checks run in
// the contract's order: capacity, catalog and allowlist, per-image caps,
// env, image cache, boot.
func (m *Manager) Create(ctx context.Context, req api.CreateRequest) (resp api.CreateResponse, err error) {
	ctx, done := tracing.Create(ctx, m.trace.obs, req)
	defer func() { done(resp, err) }()
	var from *Origin
	if req.Template != "" || req.SnapshotID != "" {
		if m.originOf == nil {
			return api.CreateResponse{}, errdefs.New(errdefs.CodeUnsupported, "this daemon keeps no snapshots or templates")
		}
		if from, err = m.originOf(ctx, &req); err != nil {
			return api.CreateResponse{}, err
		}
	}
	return m.create(ctx, req, from)
}

// create is Create; with from, the sandbox starts from that origin, whose
// image (and for a checkpoint cpus and memory) req already names.
func (m *Manager) create(ctx context.Context, req api.CreateRequest, from *Origin) (resp api.CreateResponse, err error) {
	owner := auth.OwnerFrom(ctx)
	if err := m.reserve(owner); err != nil {
		return api.CreateResponse{}, err
	}
	defer m.creating.Done()
	reserved := true
	defer func() {
		if reserved { // the create failed: its slot is given back
			m.mu.Lock()
			m.reserved--
			m.owners.release(owner)
			m.mu.Unlock()
		}
	}()
	if err := spec.Allowed(req.Image, image.Names(m.images.Catalog()), m.ImageBook().ImageAllowlist()); err != nil {
		return api.CreateResponse{}, err
	}
	rt, err := runtimeFor(m.rts, req, from)
	if err != nil {
		return api.CreateResponse{}, err
	}
	cpus, mem, err := spec.Limits(m.cfg, req)
	if err != nil {
		return api.CreateResponse{}, err
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return api.CreateResponse{}, err
	}
	if err := checkNetwork(&req, m.net); err != nil {
		return api.CreateResponse{}, err
	}
	if err := m.vols.check(ctx, req, from); err != nil {
		return api.CreateResponse{}, err
	}
	t, err := spec.CreateTerms(req, m.cfg.DefaultIdleTimeoutSecs)
	if err != nil {
		return api.CreateResponse{}, err
	}
	if from != nil && from.Checkpoint != "" && (req.Network != from.Network || cpus != from.CPUs || mem != from.MemoryMB) {
		return api.CreateResponse{}, errdefs.New(errdefs.CodeMalformed, "a sandbox restored from a snapshot keeps its cpus (%d), memory_mb (%d) and network (%v)", from.CPUs, from.MemoryMB, from.Network)
	}
	if from == nil && rt == m.rts.Default() && (m.reattach == nil || !m.reattach(req.Metadata, req.Network)) {
		if sb, ok := (poolCore{m}).svc().Claim(ctx, req, cpus, mem, t); ok {
			reserved = false // register takes the reservation over
			return m.register(sb)
		}
	}
	m.pool.Shed()
	img, release, err := m.ensureImage(ctx, req.Image)
	if err != nil {
		return api.CreateResponse{}, err
	}
	defer release()
	if from != nil && img.ID != from.ImageID {
		return api.CreateResponse{}, errdefs.New(errdefs.CodeImageMissing, "image %s has changed since the snapshot or template was taken; it starts only on the image it was taken on", req.Image)
	}
	id := uuid.NewString()
	if from != nil && from.ID != "" { // issue 46: a container created ahead for it
		id = from.ID
	}
	rec := &record{
		ID:        id,
		Image:     req.Image,
		ImageID:   img.ID,
		Owner:     owner,
		Runtime:   rt.Name(),
		CPUs:      cpus,
		MemoryMB:  mem,
		Network:   req.Network,
		Egress:    req.Egress,
		Env:       req.Env,
		Volumes:   req.Volumes,
		CreatedAt: time.Now().UTC(),
	}
	applyTerms(rec, t)
	if err := m.vols.acquire(rec); err != nil {
		return api.CreateResponse{}, err
	}
	bootCtx, booted := tracing.Boot(ctx, rec.ID, rec.Runtime, rec.CPUs, rec.MemoryMB)
	sb, err := m.bootSandbox(bootCtx, rec, img, from)
	booted(err)
	failpoint.Hit("create.after-boot")
	if err != nil {
		m.vols.release(rec.ID)
		return api.CreateResponse{}, err
	}
	if err := m.admit(sb); err != nil {
		return api.CreateResponse{}, err
	}
	reserved = false // register takes the reservation over
	return m.register(sb)
}

// admit makes a booted (or pooled) sandbox its owner's: it moves to
// Running and its record is stored. On failure the sandbox is torn down.
func (m *Manager) admit(sb *sandbox) error {
	if err := sb.admitted(); err != nil {
		<-m.stopAsync(sb, warmpool.End("could not be admitted"))
		return fmt.Errorf("admitting sandbox %s: %w", sb.rec.ID, err)
	}
	rec := sb.snapshotRecord()
	if err := m.store.put(&rec); err != nil {
		<-m.stopAsync(sb, warmpool.End("could not be recorded"))
		return fmt.Errorf("recording sandbox %s: %w", sb.rec.ID, err)
	}
	return nil
}

// register makes a booted sandbox live in place of the capacity slot its
// create reserved.
func (m *Manager) register(sb *sandbox) (api.CreateResponse, error) {
	rec := &sb.rec
	m.mu.Lock()
	m.reserved--
	m.owners.release(rec.Owner)
	if m.closed {
		m.mu.Unlock()
		<-m.stopAsync(sb, endShutdown)
		return api.CreateResponse{}, errdefs.ShuttingDown()
	}
	m.sandboxes[rec.ID] = sb
	m.mu.Unlock()
	go m.watch(sb)
	m.reaper.Wake()
	m.log.Info("sandbox created", "sandbox", rec.ID, "image", rec.Image, "cpus", rec.CPUs, "memory_mb", rec.MemoryMB)
	m.emitFor(sb, api.EventSandboxCreated, map[string]any{"image": rec.Image, "cpus": rec.CPUs, "memory_mb": rec.MemoryMB, "network": rec.Network})
	// Its agent answered and it is listed: it takes commands from now on.
	m.emitFor(sb, api.EventSandboxReady, nil)
	return api.CreateResponse{SandboxID: rec.ID, Image: rec.Image, UnforwardedPorts: rec.unforwarded, Runtime: rec.Runtime}, nil
}

// bootSandbox starts the runtime and connects to the agent; the sandbox
// it returns is Booting, not yet recorded. On any failure, and when the
// daemon shuts down meanwhile, it leaves nothing behind.
func (m *Manager) bootSandbox(ctx context.Context, rec *record, img *image.Image, from *Origin) (_ *sandbox, err error) {
	user, err := spec.ImageUser(img)
	if err != nil {
		return nil, err
	}
	// failed is the error of a boot that failed with err: the caller's own
	// context error when it went away, S301 when the daemon shut down.
	failed := func(err error) error {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case m.shutdown.Err() != nil:
			return errdefs.ShuttingDown()
		}
		return err
	}
	// A slot of the boot's priority (priorityOf); it is released once the
	// agent answered or the boot failed.
	release, err := m.boots.Acquire(ctx, int(priorityOf(ctx)), m.shutdown.Done())
	if err != nil {
		return nil, failed(err)
	}
	defer release()
	rt := m.runtimeOf(rec)
	bootCtx, cancel := context.WithTimeout(ctx, max(m.bootTimeout, runtime.BootTimeoutOf(rt)))
	defer cancel()
	stop := context.AfterFunc(m.shutdown, cancel)
	defer stop()
	var undo cleanup.Stack
	defer undo.RunUnless(ctx, &err)
	if rec.Network && m.net != nil {
		rec.forwarded, rec.unforwarded = m.net.Gateway(rec.ID, rec.Owner, rec.Env)
	}
	art, err := runtime.Prepare(bootCtx, rt, runtime.ImageRef{ID: img.ID, Rootfs: img.Rootfs})
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "preparing image "+rec.Image)
	}
	inst, ac, err := m.start(bootCtx, &undo, rt, rec, art, from, user)
	if err != nil {
		return nil, failed(err)
	}
	if rec.Network {
		// Its loopback URLs of forwarded ports point at its gateway.
		rec.Env = m.net.UseGateway(rec.ID, rec.Env, rec.forwarded)
	}
	if err := ctx.Err(); err != nil {
		// The caller went away: nobody will ever learn this sandbox's id.
		return nil, err
	}
	return newSandbox(rec, inst, ac, img, user, m.cfg.MaxConcurrentExecPerSandbox), nil
}

// start attaches rec's network (its gateway forwarding rec.forwarded;
// none without network: true), starts its runtime instance on art from
// from (nil: nothing) and connects to its agent as user, pushing the undo
// of each step on undo. A boot and a wake both take this path.
func (m *Manager) start(ctx context.Context, undo *cleanup.Stack, rt runtime.Runtime, rec *record, art runtime.Artifact, from *Origin, user *image.User) (runtime.Instance, *agentclient.Client, error) {
	var nw *runtime.NetworkAttachment
	if rec.Network {
		if m.net == nil {
			return nil, nil, NoNetwork()
		}
		var err error
		if nw, err = m.net.Attach(ctx, rec.ID, rec.forwarded, egress.MustCompile(rec.Egress)); err != nil {
			return nil, nil, err
		}
		undo.Push("tearing down the network", func(context.Context) error { m.net.Detach(rec.ID); return nil })
	}
	spec := runtime.Spec{
		ID:              rec.ID,
		Image:           art,
		AgentPath:       m.agent,
		CPUs:            rec.CPUs,
		MemoryMB:        rec.MemoryMB,
		PidsLimit:       m.cfg.PidsLimit,
		WritableLayerMB: m.cfg.WritableLayerMB,
		Network:         nw,
		Hostname:        "hutch-" + rec.ID[:8],
		Mounts:          rec.mounts,
		Reattach:        m.reattaches(rec),
	}
	inst, err := launch(ctx, rt, spec, from)
	if err != nil {
		return nil, nil, err
	}
	undo.Push("destroying the runtime instance", inst.Destroy)
	ac, err := m.connect(ctx, inst, user)
	if err != nil {
		return nil, nil, err
	}
	undo.Push("closing the agent connection", func(context.Context) error { return ac.Close() })
	return inst, ac, nil
}

// launch starts spec's sandbox: boots it (with a captured layer), or
// restores it from a checkpoint (of a sandbox booted with that layer).
func launch(ctx context.Context, rt runtime.Runtime, spec runtime.Spec, from *Origin) (runtime.Instance, error) {
	if from != nil { // a restore names the layer its checkpoint booted with
		spec.UpperLayer = from.Layer
	}
	if from == nil || from.Checkpoint == "" {
		return rt.Start(ctx, spec)
	}
	r, ok := rt.(runtime.Restorer)
	if !ok {
		return nil, unsupported(rt.Name(), "restore sandboxes from checkpoints")
	}
	inst, err := r.Restore(ctx, spec, from.Checkpoint)
	failpoint.Hit("restore.after-restore")
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "restoring sandbox "+spec.ID)
	}
	return inst, nil
}

// connect dials the agent of inst and waits until it answers (S300 with
// the runtime's stderr tail when it does not): a boot does it, and so
// will a restore for the instance it replaces a sandbox's with.
func (m *Manager) connect(ctx context.Context, inst runtime.Instance, user *image.User) (*agentclient.Client, error) {
	ac, err := agentclient.Dial(inst.Conn(), agentclient.Options{
		MaxOutputBytes: m.cfg.MaxOutputBytes,
		FsUser:         spec.FsUser(user),
		CallTimeout:    m.callTimeout,
	})
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "connecting to the sandbox agent")
	}
	if err := ac.WaitReady(ctx); err != nil {
		ac.Close()
		msg := fmt.Sprintf("starting the sandbox agent: %v", err)
		if tail := strings.TrimSpace(inst.StderrTail()); tail != "" {
			msg += ": " + safetext.Tail(tail, 2*safetext.MaxLine)
		}
		return nil, errdefs.New(errdefs.CodeBootFailed, "%s", msg)
	}
	return ac, nil
}

// reserve takes a capacity slot for a create in progress of owner.
func (m *Manager) reserve(owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errdefs.ShuttingDown()
	}
	live := m.reserved + m.liveLocked()
	if live >= m.cfg.MaxConcurrentSandboxes {
		return errdefs.New(errdefs.CodeCapacity, "capacity reached: %d sandboxes are live (max_concurrent_sandboxes=%d)", live, m.cfg.MaxConcurrentSandboxes).
			WithFix(nil, "stop a sandbox, or raise max_concurrent_sandboxes")
	}
	if err := m.owners.roomLocked(owner, m.cfg.MaxSandboxesPerOwner, m.sandboxes); err != nil {
		return err
	}
	m.reserved++
	m.owners.reserve(owner)
	// Under mu, with closed false: Close's Wait starts after this Add.
	m.creating.Add(1)
	return nil
}

// Live is the number of live (not stopped) sandboxes of every owner, for
// the daemon's gauges.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveLocked()
}

// liveLocked counts the live sandboxes (warm pool ones are not in
// m.sandboxes); m.mu must be held, and each sandbox's is taken.
func (m *Manager) liveLocked() int {
	n := 0
	for _, sb := range m.sandboxes {
		if !sb.isStopped() {
			n++
		}
	}
	return n
}

// Stop stops a sandbox; stopping a stopped one is not an error. With Wait
// it returns once every resource of the sandbox is gone.
func (m *Manager) Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.StopResponse{}, err
	}
	done := m.stopAsync(sb, endRequest)
	if req.Wait {
		select {
		case <-done:
		case <-ctx.Done():
			return api.StopResponse{}, ctx.Err()
		}
	}
	return api.StopResponse{SandboxID: sb.rec.ID, Stopped: true}, nil
}

// stopAsync ends sb with end (the first end wins) and tears it down in
// the background; it returns a channel closed when the teardown is over.
// A sandbox that never ran (booting, or in the warm pool) had no owner:
// its stop is neither counted nor recorded.
func (m *Manager) stopAsync(sb *sandbox, end runtime.End) <-chan struct{} {
	m.stop(sb, end, nil)
	return sb.destroyed
}

// stop is stopAsync, for a death d when not nil (sandbox.finish); it
// reports whether this call ended sb.
func (m *Manager) stop(sb *sandbox, end runtime.End, d *death) bool {
	end, was, ok := sb.finish(end, d)
	if !ok {
		return false
	}
	if was == Booting || was == Pooled {
		m.log.Debug("unclaimed sandbox discarded", "sandbox", sb.rec.ID, "image", sb.rec.Image, "reason", end.Detail)
	} else {
		m.log.Info("sandbox stopping", "sandbox", sb.rec.ID, "cause", end.Cause, "reason", end.Detail)
		tracing.Or(m.trace.obs).Stopped(string(end.Cause))
		m.emitFor(sb, api.EventSandboxStopped, map[string]any{"cause": end.Cause, "reason": end.Detail})
		failpoint.Hit("stop.after-event")
		rec := sb.snapshotRecord()
		if err := m.store.put(&rec); err != nil {
			m.log.Error("recording sandbox stop", "sandbox", rec.ID, "err", err)
		}
	}
	m.stopped(sb.rec.ID)
	// Torn down in the background; Close waits for it.
	m.destroying.Go(func() { m.teardown(sb) })
	return true
}

// teardown closes the agent connection and destroys the runtime instance
// of a Stopping sb, moves it to Stopped and leaves only a tombstone of it
// in the manager.
func (m *Manager) teardown(sb *sandbox) {
	defer close(sb.destroyed)
	defer func() {
		// Only a tombstone of its record is left, so that for
		// stopped_retention_secs the manager holds no agent session,
		// runtime instance or buffers of it (calls in flight keep sb
		// until they end); then the OnTeardown hooks are told.
		rec := sb.snapshotRecord()
		m.mu.Lock()
		if m.sandboxes[rec.ID] == sb {
			m.sandboxes[rec.ID] = tombstone(&rec)
		}
		m.mu.Unlock()
		m.tornDown(rec.ID)
	}()
	defer func() {
		if err := sb.transition(Stopped); err != nil {
			m.log.Error("tearing down sandbox", "sandbox", sb.rec.ID, "err", err)
		}
	}()
	defer os.RemoveAll(m.hibernateDir(sb.rec.ID))
	// After the instance is destroyed, before the teardown is over.
	defer m.vols.release(sb.rec.ID)
	inst, ac := sb.conn()
	if ac != nil {
		ac.Close()
	}
	if inst == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inst.Destroy(ctx); err != nil {
		m.log.Error("destroying sandbox", "sandbox", sb.rec.ID, "err", err)
	}
	if sb.rec.Network && m.net != nil {
		m.net.Detach(sb.rec.ID)
	}
}

// watch ends a running sandbox whose runtime exits on its own (out of
// memory, a crashed agent) or whose agent stream breaks, recording why.
// While the sandbox is quiesced (a pause, checkpoint or resume under way)
// neither is a death: the operation decides, and may replace the instance
// and connection, which the watcher then follows.
func (m *Manager) watch(sb *sandbox) {
	for {
		inst, ac, changed := sb.watched()
		select {
		case <-sb.destroyed:
			return
		case <-changed:
			continue
		case <-inst.Done():
		case <-ac.Done():
			if !violation(ac).Ended() {
				// The agent stream broke; the instance normally ends right after.
				select {
				case <-inst.Done():
				case <-time.After(endGrace):
				case <-sb.destroyed:
					return
				}
			}
		}
		if m.stop(sb, endOf(inst, ac), &death{inst, ac}) || sb.isStopped() {
			return
		}
		// Quiesced, or replaced: what comes next decides.
		select {
		case <-changed:
		case <-sb.destroyed:
			return
		}
	}
}

// Get returns one sandbox's list entry.
func (m *Manager) Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.SandboxInfo{}, err
	}
	return sb.info(m.cfg.MaxConcurrentExecPerSandbox), nil
}

// reattaches says that rec's sandbox outlives its daemon, for the next
// to adopt (issue 35): Options.Reattach says so and it mounts no volume.
func (m *Manager) reattaches(rec *record) bool {
	return m.reattach != nil && m.reattach(rec.Metadata, rec.Network) && len(rec.Volumes) == 0
}

// Close stops every sandbox but the running or frozen ones that reattach
// (left to the next daemon, issue 35), ends the creates in flight and waits for
// both, then closes the store. Creates after Close fail (S301).
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.shut()
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		sbs = append(sbs, sb)
	}
	m.mu.Unlock()
	m.reaper.Close()
	m.pool.Close(endShutdown)
	sbs = slices.DeleteFunc(sbs, func(sb *sandbox) bool {
		st, _ := sb.current()
		if !(st == Running || st == Paused && sb.pauseDepth() == api.PauseFreeze) || !m.reattaches(&sb.rec) {
			return false
		}
		m.log.Info("sandbox left running for a restarted daemon to adopt", "sandbox", sb.rec.ID)
		return true
	})
	for _, sb := range sbs {
		m.stopAsync(sb, endShutdown)
	}
	waited := make(chan struct{})
	go func() {
		// Creates in flight end (their boots are cancelled, or register
		// tears their sandbox down) before their teardowns are waited for.
		m.creating.Wait()
		for _, sb := range sbs {
			<-sb.destroyed
		}
		m.destroying.Wait()
		close(waited)
	}()
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = fmt.Errorf("waiting for sandboxes to stop: %w", ctx.Err())
	}
	return errors.Join(err, m.store.close())
}
