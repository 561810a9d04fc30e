package sandbox

// The core's side of the warm pool (package warmpool keeps the pools):
// booting a pool sandbox, checking, resizing and discarding one, room in
// max_concurrent_sandboxes, and making a claimed one the caller's.
//
// A pool sandbox is booted with its pool's shape (cpus, memory and
// whether it has a network: package poolplan sizes the pools,
// pool_network.go) by the pool's refill loop. Until a create claims it,
// it belongs to no owner, is not listed, is never reaped for idleness and
// is not in the metadata store, so a daemon that crashes never re-adopts
// it (start-up reconciliation destroys it with every other leftover
// runtime). A create fits a pool when it asks for no volumes, for a
// network exactly when the pool has one, and for at most the pool shape's
// cpus and memory; claiming applies its env (the manager keeps env on the
// host side, so that is free), smaller limits (a cgroup update), its
// egress policy (for a network) and its idle timeout, then records it as
// a sandbox of the caller.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
)

// warmCore is what the warm pool asks of the manager (warmpool.Core).
type warmCore struct{ m *Manager }

var _ warmpool.Core[*sandbox] = warmCore{}

// newWarmPool builds m's pool, of its config (warm_pool, warm_pool_auto
// and their bounds), or nil when it never keeps a sandbox. It shares
// m.mu, because room in the pool is room in max_concurrent_sandboxes.
func newWarmPool(m *Manager) *warmpool.Pool[*sandbox] {
	return warmpool.New[*sandbox](m.cfg, warmCore{m}, &m.mu, m.log, bootSlotsOf(m.cfg)-1)
}

// claim takes a pool sandbox for a create whose request and resolved
// limits are given, or returns nil when the create should boot its own.
// The sandbox it returns is recorded as the caller's, with req's name,
// env, limits, egress policy and life terms, and still has to be
// registered.
func (c warmCore) claim(ctx context.Context, req api.CreateRequest, cpus, mem uint32, t spec.Terms) *sandbox {
	m := c.m
	// Volumes are mounted at boot: no pool sandbox has them. A network
	// is pooled (pool_network.go) when the claim can give it the create's
	// policy and gateway.
	fits := func() bool { return len(req.Volumes) == 0 && (!req.Network || c.networkFits(req.Env)) }
	want := poolplan.Shape{CPUs: cpus, MemoryMB: mem, Network: req.Network}
	sb, ok := m.pool.Claim(ctx, req.Image, want, fits, func(sb *sandbox) error {
		// Nobody else sees sb until it is registered.
		rec := &sb.rec
		rec.Owner, rec.Env = auth.OwnerFrom(ctx), req.Env
		rec.CPUs, rec.MemoryMB = cpus, mem
		applyTerms(rec, t)
		rec.CreatedAt = time.Now().UTC()
		if rec.Network {
			if err := c.claimNetwork(ctx, sb, req.Egress); err != nil {
				// Fail closed: the sandbox may not keep a policy other
				// than the create's.
				m.log.Warn("applying a create's network to a warm pool sandbox", "sandbox", rec.ID, "err", err)
				return &warmpool.Unfit{Detail: "could not apply the create's network"}
			}
		}
		sb.baseEnv = baseEnv(sb.user, sb.image, rec.Env)
		sb.touch()
		if err := m.admit(sb); err != nil {
			m.log.Error("admitting a warm pool sandbox", "sandbox", rec.ID, "err", err)
			return err
		}
		return nil
	})
	if !ok {
		return nil
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("hutch.warm_pool_hit", true))
	m.log.Debug("sandbox taken from the warm pool", "sandbox", sb.rec.ID, "image", sb.rec.Image)
	return sb
}

// Boot boots one pool sandbox of key's image and shape, at the boot
// priority of a refill, and warms it up.
func (c warmCore) Boot(ctx context.Context, key poolplan.Key) (*sandbox, error) {
	m := c.m
	ctx = withBootPriority(ctx, bootForPool)
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
		c.Discard(sb, warmpool.End("could not join the pool"))
		return nil, err
	}
	if err := warmUp(ctx, sb); err != nil {
		c.Discard(sb, warmpool.End("its warm-up exec failed"))
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
	spec.ApplyUser(areq, sb.user)
	// The exit status does not matter: in an image without true the
	// spawn path has run all the same.
	if _, err := sb.client().Exec(ctx, areq); err != nil {
		return fmt.Errorf("warming up sandbox %s: %w", sb.rec.ID, err)
	}
	return nil
}

// Alive reports whether a pool sandbox's runtime and agent still run.
func (warmCore) Alive(sb *sandbox) bool {
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

// Wait returns why a pool sandbox ended, or false once it left the pool.
func (warmCore) Wait(sb *sandbox, taken <-chan struct{}) (runtime.End, bool) {
	inst, ac := sb.conn()
	select {
	case <-taken:
		return runtime.End{}, false
	case <-inst.Done():
	case <-ac.Done():
	}
	return endOf(inst, ac), true
}

// Resize applies a create's smaller limits to a pool sandbox.
func (warmCore) Resize(sb *sandbox, want, shape poolplan.Shape) error {
	inst, _ := sb.conn()
	r, ok := inst.(runtime.Resizer)
	if !ok {
		return errNoResize
	}
	cpus, mem := want.CPUs, want.MemoryMB
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

// Discard ends a sandbox that left the pool without being claimed and
// tears it down in the background (Close waits for it).
func (c warmCore) Discard(sb *sandbox, end runtime.End) <-chan struct{} {
	return c.m.stopAsync(sb, end)
}

// Free is the room live sandboxes and creates in progress leave under
// max_concurrent_sandboxes; m.mu is held.
func (c warmCore) Free() int {
	return c.m.cfg.MaxConcurrentSandboxes - c.m.liveLocked() - c.m.reserved
}

// Closed reports whether the manager is closing; m.mu is held.
func (c warmCore) Closed() bool { return c.m.closed }

// Built reports whether image is in the cache, ready.
func (c warmCore) Built(name string) bool {
	return c.m.images.Status(name).State == image.StateReady
}

// ID is a pool sandbox's id.
func (warmCore) ID(sb *sandbox) string { return sb.rec.ID }

// pauseWarm is the pool's pause of image, for an image removal.
func (m *Manager) pauseWarm(image string) (resume func()) { return m.pool.Pause(image) }

// refreshWarm is the pool's refresh of image, for an image pull: pool
// sandboxes booted from another image id than imageID are discarded.
func (m *Manager) refreshWarm(image, imageID string) {
	m.pool.Refresh(image, func(sb *sandbox) bool { return sb.rec.ImageID != imageID })
}

// WarmPool reports the warm pool of every image that has one planned, holds
// sandboxes or was claimed from, sorted by image; nil without a pool.
func (m *Manager) WarmPool() []warmpool.Stat { return m.pool.Stats() }

// SetWarmPool resizes the warm pool live to cfg's warm_pool keys (issue
// 41: 4); false when m runs without a pool, which only a restart adds.
func (m *Manager) SetWarmPool(cfg config.Config) bool { return m.pool.Reconfigure(cfg) }
