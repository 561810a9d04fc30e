// Package sandbox is the sandbox manager: the lifecycle state machine
// (create, exec, stop), limits, the idle reaper, the catalog and allowlist
// policy, and the metadata store. It implements functions.Sandboxes and is
// the only place that decides what a request may do.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Images is what the manager needs of the image store (image.Store).
type Images interface {
	Ensure(ctx context.Context, name string, install bool) (*image.Image, error)
	Status(name string) api.ImageStatus
	// Catalog is the daemon's one catalog: presets, then custom images.
	Catalog() []image.Entry
	Pull(ctx context.Context, name string) (*image.Image, error)
	Remove(ctx context.Context, name string, guard func(id string) error) (bool, error)
}

// Options configure a Manager.
type Options struct {
	Config  config.Config
	Runtime runtime.Runtime
	Images  Images
	// AgentPath is the host path of the hutch-agent binary.
	AgentPath string
	// StateDir holds the metadata store (hutch.db).
	StateDir string
	Logger   *slog.Logger
	// BootTimeout bounds a create from runtime start to agent answer.
	BootTimeout time.Duration
	// Observer receives measurements (observe.go); nil discards them.
	Observer Observer
}

// Manager owns every sandbox of one daemon.
type Manager struct {
	cfg         config.Config
	rt          runtime.Runtime
	images      Images
	agent       string
	log         *slog.Logger
	store       *store
	bootTimeout time.Duration
	// protected are the daemon's own ports, never forwarded (network.go).
	protected protectedPorts

	// destroying tracks background teardowns, so Close can wait for them.
	destroying sync.WaitGroup
	stopReaper chan struct{}
	reaperDone chan struct{}
	// reapSoon wakes the reaper to recompute its interval (reaper.go).
	reapSoon chan struct{}
	obs      Observer
	// pool is the warm pool (pool.go); nil without one.
	pool *warmPool

	mu sync.Mutex
	// The fields below are guarded by mu.
	sandboxes map[string]*sandbox
	// reserved counts creates in progress, so capacity holds under races.
	reserved int
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
	m := &Manager{
		cfg:         opts.Config,
		rt:          opts.Runtime,
		images:      opts.Images,
		agent:       opts.AgentPath,
		log:         opts.Logger,
		store:       st,
		bootTimeout: opts.BootTimeout,
		sandboxes:   map[string]*sandbox{},
		stopReaper:  make(chan struct{}),
		reaperDone:  make(chan struct{}),
		reapSoon:    make(chan struct{}, 1),
		obs:         opts.Observer,
		pool:        newWarmPool(opts.Config),
	}
	if err := m.reconcile(ctx); err != nil {
		st.close()
		return nil, err
	}
	go m.reaper()
	m.startWarm()
	return m, nil
}

// reconcile settles what a crashed daemon left: a sandbox's agent stream
// dies with the daemon that held it, so no sandbox of an earlier process
// can be re-adopted. Records of live sandboxes become stopped tombstones
// and every runtime resource is destroyed.
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
	for _, r := range recs {
		if r.Stopped && now.Sub(r.StoppedAt) > retention {
			_ = m.store.remove(r.ID)
			continue
		}
		if !r.Stopped {
			r.Stopped, r.StopReason, r.StoppedAt = true, "daemon restarted; the sandbox was destroyed", now
			if err := m.store.put(r); err != nil {
				return fmt.Errorf("marking sandbox %s stopped: %w", r.ID, err)
			}
			m.log.Info("sandbox from an earlier daemon destroyed", "sandbox", r.ID)
		}
		m.sandboxes[r.ID] = tombstone(r)
	}
	destroyed, err := m.rt.Reconcile(ctx, func(string) bool { return false })
	if err != nil {
		return fmt.Errorf("reconciling runtime state: %w", err)
	}
	if len(destroyed) > 0 {
		m.log.Info("destroyed leftover sandboxes", "count", len(destroyed), "ids", destroyed)
	}
	return nil
}

// Create boots a sandbox. Checks run in the contract's order: capacity,
// catalog and allowlist, per-image caps, env, image cache, boot.
func (m *Manager) Create(ctx context.Context, req api.CreateRequest) (resp api.CreateResponse, err error) {
	ctx, done := m.traceCreate(ctx, req)
	defer func() { done(resp, err) }()
	owner := auth.OwnerFrom(ctx)
	if err := m.reserve(owner); err != nil {
		return api.CreateResponse{}, err
	}
	reserved := true
	defer func() {
		if reserved {
			m.unreserve(owner)
		}
	}()
	if err := m.allowed(req.Image); err != nil {
		return api.CreateResponse{}, err
	}
	cpus, mem, err := m.limits(req)
	if err != nil {
		return api.CreateResponse{}, err
	}
	if err := validateEnv("env", req.Env); err != nil {
		return api.CreateResponse{}, err
	}
	if len(req.Name) > 128 {
		return api.CreateResponse{}, errdefs.Malformed("name is longer than 128 bytes")
	}
	idle, err := m.idleTimeout(req.IdleTimeoutSecs)
	if err != nil {
		return api.CreateResponse{}, err
	}
	if sb := m.claimWarm(ctx, req, cpus, mem, idle); sb != nil {
		reserved = false // register takes the reservation over
		return m.register(sb)
	}
	m.shedWarm()
	img, release, err := m.ensureImage(ctx, req.Image)
	if err != nil {
		return api.CreateResponse{}, err
	}
	defer release()
	rec := &record{
		ID:              uuid.NewString(),
		Name:            req.Name,
		Image:           req.Image,
		ImageID:         img.ID,
		Owner:           owner,
		Runtime:         m.rt.Name(),
		CPUs:            cpus,
		MemoryMB:        mem,
		Network:         req.Network,
		IdleTimeoutSecs: idle,
		Env:             req.Env,
		CreatedAt:       time.Now().UTC(),
	}
	sb, err := m.traceBoot(ctx, rec, img)
	if err != nil {
		return api.CreateResponse{}, err
	}
	reserved = false // register takes the reservation over
	return m.register(sb)
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
		m.destroy(sb, "daemon shutting down")
		return api.CreateResponse{}, errdefs.New(errdefs.CodeBootFailed, "the daemon is shutting down")
	}
	m.sandboxes[rec.ID] = sb
	m.mu.Unlock()
	go m.watch(sb)
	m.wakeReaper()
	m.log.Info("sandbox created", "sandbox", rec.ID, "image", rec.Image, "cpus", rec.CPUs, "memory_mb", rec.MemoryMB)
	return api.CreateResponse{SandboxID: rec.ID, Image: rec.Image, UnforwardedPorts: rec.unforwarded}, nil
}

// bootSandbox starts the runtime, connects to the agent and persists the
// record; on any failure it leaves nothing behind.
func (m *Manager) bootSandbox(ctx context.Context, rec *record, img *image.Image) (*sandbox, error) {
	user, err := resolveUser(img)
	if err != nil {
		return nil, err
	}
	bootCtx, cancel := context.WithTimeout(ctx, m.bootTimeout)
	defer cancel()
	ports, refused := m.gatewayPorts(rec)
	rec.unforwarded = refused
	art, err := runtime.Prepare(bootCtx, m.rt, runtime.ImageRef{ID: img.ID, Rootfs: img.Rootfs})
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "preparing image "+rec.Image)
	}
	inst, err := m.rt.Start(bootCtx, runtime.Spec{
		ID:              rec.ID,
		Image:           art,
		AgentPath:       m.agent,
		CPUs:            rec.CPUs,
		MemoryMB:        rec.MemoryMB,
		PidsLimit:       m.cfg.PidsLimit,
		WritableLayerMB: m.cfg.WritableLayerMB,
		Network:         rec.Network,
		GatewayPorts:    ports,
		Hostname:        "hutch-" + rec.ID[:8],
	})
	if err != nil {
		return nil, err
	}
	m.useGateway(rec, inst, ports)
	fail := func(err error) (*sandbox, error) {
		_ = inst.Destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	ac, err := agentclient.Dial(inst.Conn(), agentclient.Options{MaxOutputBytes: m.cfg.MaxOutputBytes, FsUser: fsUser(user)})
	if err != nil {
		return fail(errdefs.Wrap(errdefs.CodeBootFailed, err, "connecting to the sandbox agent"))
	}
	if err := ac.WaitReady(bootCtx); err != nil {
		ac.Close()
		tail := strings.TrimSpace(inst.StderrTail())
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		msg := fmt.Sprintf("starting the sandbox agent: %v", err)
		if tail != "" {
			msg += ": " + safetext.Tail(tail, 2*safetext.MaxLine)
		}
		return fail(errdefs.New(errdefs.CodeBootFailed, "%s", msg))
	}
	if err := ctx.Err(); err != nil {
		// The caller went away: nobody will ever learn this sandbox's id.
		ac.Close()
		return fail(err)
	}
	// A warm pool sandbox is recorded only once a create claims it.
	if err := m.putUnlessPooled(rec); err != nil {
		ac.Close()
		return fail(fmt.Errorf("recording sandbox %s: %w", rec.ID, err))
	}
	return newSandbox(rec, inst, ac, img, user, m.cfg.MaxConcurrentExecPerSandbox), nil
}

// reserve takes a capacity slot for a create in progress of owner.
func (m *Manager) reserve(owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errdefs.New(errdefs.CodeBootFailed, "the daemon is shutting down")
	}
	live := m.reserved + m.liveLocked()
	if live >= m.cfg.MaxConcurrentSandboxes {
		return errdefs.New(errdefs.CodeCapacity, "capacity reached: %d sandboxes are live (max_concurrent_sandboxes=%d)", live, m.cfg.MaxConcurrentSandboxes).
			WithFix(nil, "stop a sandbox, or raise max_concurrent_sandboxes")
	}
	if err := m.ownerRoomLocked(owner); err != nil {
		return err
	}
	m.reserved++
	m.owners.reserve(owner)
	return nil
}

// liveLocked counts the live sandboxes (warm pool ones are not in
// m.sandboxes); m.mu must be held.
func (m *Manager) liveLocked() int {
	n := 0
	for _, sb := range m.sandboxes {
		if !sb.isStopped() {
			n++
		}
	}
	return n
}

// unreserve gives back the slot of a create of owner that failed.
func (m *Manager) unreserve(owner string) {
	m.mu.Lock()
	m.reserved--
	m.owners.release(owner)
	m.mu.Unlock()
}

// allowed checks that name is in the catalog and the allowlist (S100).
func (m *Manager) allowed(name string) error {
	if name == "" {
		return errdefs.Malformed("image is required (a catalog name such as python or node)")
	}
	allowed := make([]string, 0, len(m.cfg.ImageAllowlist))
	for _, n := range m.catalog() {
		if slices.Contains(m.cfg.ImageAllowlist, n) {
			allowed = append(allowed, n)
		}
	}
	if slices.Contains(allowed, name) {
		return nil
	}
	list := strings.Join(allowed, ", ")
	if list == "" {
		list = "none (image_allowlist is empty)"
	}
	hint := ""
	if strings.ContainsAny(name, "/:@") {
		hint = " (image is a catalog name, not an OCI reference; register references under custom_images)"
	}
	return errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not allowed%s; allowed images: %s", clip(name, 128), hint, list)
}

// limits resolves cpus and memory against defaults, sanity bounds (S001)
// and per-image caps (S400).
func (m *Manager) limits(req api.CreateRequest) (cpus, mem uint32, err error) {
	cpus, mem = req.CPUs, req.MemoryMB
	if cpus == 0 {
		cpus = m.cfg.DefaultCPUs
	}
	if mem == 0 {
		mem = m.cfg.DefaultMemoryMB
	}
	if err := config.CheckCPUs(cpus); err != nil {
		return 0, 0, errdefs.Malformed("%v", err)
	}
	if err := config.CheckMemoryMB(mem); err != nil {
		return 0, 0, errdefs.Malformed("%v", err)
	}
	if caps, ok := m.cfg.PerImageCaps[req.Image]; ok {
		if caps.MaxCPUs > 0 && cpus > caps.MaxCPUs {
			return 0, 0, errdefs.New(errdefs.CodeCapacity, "cpus %d is over the cap of %d for image %s", cpus, caps.MaxCPUs, req.Image).
				WithFix(map[string]any{"cpus": caps.MaxCPUs}, "lower cpus or raise per_image_caps")
		}
		if caps.MaxMemoryMB > 0 && mem > caps.MaxMemoryMB {
			return 0, 0, errdefs.New(errdefs.CodeCapacity, "memory_mb %d is over the cap of %d for image %s", mem, caps.MaxMemoryMB, req.Image).
				WithFix(map[string]any{"memory_mb": caps.MaxMemoryMB}, "lower memory_mb or raise per_image_caps")
		}
	}
	return cpus, mem, nil
}

// lookup finds the sandbox of a request's id: S001 malformed, S002 unknown
// (or another owner's), otherwise the sandbox, stopped or not.
func (m *Manager) lookup(ctx context.Context, id string) (*sandbox, error) {
	id, err := parseID(id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok || sb.rec.Owner != auth.OwnerFrom(ctx) {
		return nil, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", id)
	}
	return sb, nil
}

// Stop stops a sandbox; stopping a stopped one is not an error. With Wait
// it returns once every resource of the sandbox is gone.
func (m *Manager) Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.StopResponse{}, err
	}
	done := m.stopAsync(sb, reasonRequest)
	if req.Wait {
		select {
		case <-done:
		case <-ctx.Done():
			return api.StopResponse{}, ctx.Err()
		}
	}
	return api.StopResponse{SandboxID: sb.rec.ID, Stopped: true}, nil
}

// stopAsync marks sb stopped with reason and tears it down in the
// background; it returns a channel closed when the teardown is over.
func (m *Manager) stopAsync(sb *sandbox, reason string) <-chan struct{} {
	reason, ok := sb.markStopped(reason)
	if !ok {
		return sb.destroyed
	}
	m.log.Info("sandbox stopping", "sandbox", sb.rec.ID, "reason", reason)
	m.observer().Stopped(stopCause(reason))
	m.persistStopped(sb)
	m.teardownAsync(sb)
	return sb.destroyed
}

// teardownAsync tears sb down in the background; Close waits for it.
func (m *Manager) teardownAsync(sb *sandbox) {
	m.destroying.Add(1)
	go func() {
		defer m.destroying.Done()
		m.teardown(sb)
	}()
}

// destroy is stopAsync that waits.
func (m *Manager) destroy(sb *sandbox, reason string) {
	<-m.stopAsync(sb, reason)
}

// teardown closes the agent connection and destroys the runtime instance,
// then leaves only a tombstone of sb in the manager.
func (m *Manager) teardown(sb *sandbox) {
	defer close(sb.destroyed)
	defer m.bury(sb)
	if sb.agent != nil {
		sb.agent.Close()
	}
	if sb.inst == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sb.inst.Destroy(ctx); err != nil {
		m.log.Error("destroying sandbox", "sandbox", sb.rec.ID, "err", err)
	}
}

// bury replaces stopped sb in the manager by a tombstone of its record, so
// that for stopped_retention_secs the manager holds no agent session,
// runtime instance or buffers of it; calls in flight keep sb until they end.
func (m *Manager) bury(sb *sandbox) {
	rec := sb.snapshotRecord()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sandboxes[rec.ID] == sb {
		m.sandboxes[rec.ID] = tombstone(&rec)
	}
}

// persistStopped records a sandbox's stop in the store.
func (m *Manager) persistStopped(sb *sandbox) {
	rec := sb.snapshotRecord()
	if err := m.store.put(&rec); err != nil {
		m.log.Error("recording sandbox stop", "sandbox", rec.ID, "err", err)
	}
}

// watch ends a sandbox whose runtime exits on its own (out of memory, a
// crashed agent), recording why.
func (m *Manager) watch(sb *sandbox) {
	select {
	case <-sb.inst.Done():
	case <-sb.agent.Done():
		if violation(sb) != "" {
			break
		}
		// The agent stream broke; the instance normally ends right after.
		select {
		case <-sb.inst.Done():
		case <-time.After(2 * time.Second):
		case <-sb.destroyed:
			return
		}
	case <-sb.destroyed:
		return
	}
	m.stopAsync(sb, endReason(sb))
}

// exitReason is why inst ended, as far as it knows.
func exitReason(inst runtime.Instance) string {
	return cmp.Or(inst.Exit().Detail, "the sandbox agent went away")
}

// endReason is why sb ended: the agent protocol broken from inside the
// sandbox, or else what its runtime knows.
func endReason(sb *sandbox) string {
	return cmp.Or(violation(sb), exitReason(sb.inst))
}

// violation is how the sandbox broke the agent protocol, or "".
func violation(sb *sandbox) string {
	var pe *agentclient.ProtocolError
	if errors.As(sb.agent.Err(), &pe) {
		return pe.Error()
	}
	return ""
}

// List returns the caller's sandboxes, live and recently stopped, oldest first.
func (m *Manager) List(ctx context.Context, _ api.ListRequest) (api.ListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	m.mu.Lock()
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		if sb.rec.Owner == owner {
			sbs = append(sbs, sb)
		}
	}
	m.mu.Unlock()
	sort.Slice(sbs, func(i, j int) bool { return sbs[i].rec.CreatedAt.Before(sbs[j].rec.CreatedAt) })
	out := api.ListResponse{Sandboxes: make([]api.SandboxInfo, 0, len(sbs))}
	for _, sb := range sbs {
		out.Sandboxes = append(out.Sandboxes, sb.info(m.cfg.MaxConcurrentExecPerSandbox))
	}
	return out, nil
}

// Get returns one sandbox's list entry.
func (m *Manager) Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.SandboxInfo{}, err
	}
	return sb.info(m.cfg.MaxConcurrentExecPerSandbox), nil
}

// ImageStatus reports the cache state of a catalog image.
func (m *Manager) ImageStatus(_ context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
	if !slices.Contains(m.catalog(), req.Name) {
		return api.ImageStatus{}, errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not in the catalog; known images: %s", clip(req.Name, 128), strings.Join(m.catalog(), ", "))
	}
	return m.images.Status(req.Name), nil
}

// Close stops every sandbox and waits for their teardown, then closes the
// store. Creates after Close fail.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	sbs := make([]*sandbox, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		sbs = append(sbs, sb)
	}
	m.mu.Unlock()
	close(m.stopReaper)
	<-m.reaperDone
	m.closeWarm()
	for _, sb := range sbs {
		m.stopAsync(sb, reasonShutdown)
	}
	waited := make(chan struct{})
	go func() {
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
