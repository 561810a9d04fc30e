package sandbox

// The core's side of the warm pool (package poolsvc warms, watches and
// claims pool sandboxes; warmpool keeps the pools): booting a pool
// sandbox, what poolsvc reads of one, making a claimed one the caller's,
// discarding one, and room in max_concurrent_sandboxes.

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
	"github.com/hutch-dev/hutch/internal/sandbox/poolsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
)

// poolCore is the manager as package poolsvc sees it (poolsvc.Core).
type poolCore struct{ m *Manager }

var _ poolsvc.Core[*sandbox] = poolCore{}

// newWarmPool builds m's pool, or nil when it never keeps a sandbox. It
// shares m.mu, because room in the pool is room in
// max_concurrent_sandboxes.
func newWarmPool(m *Manager) *warmpool.Pool[*sandbox] {
	return poolsvc.New[*sandbox](m.cfg, poolCore{m}, &m.mu, m.log, bootSlotsOf(m.cfg)-1)
}

// svc is m's pool with what a claim needs.
func (c poolCore) svc() poolsvc.Service[*sandbox] {
	return poolsvc.Service[*sandbox]{Pool: c.m.pool, Core: c, Net: c.m.net, Cfg: c.m.cfg, Log: c.m.log}
}

// Boot boots one pool sandbox of key's image and shape, at the boot
// priority of a refill.
func (c poolCore) Boot(ctx context.Context, key poolplan.Key) (*sandbox, error) {
	m := c.m
	ctx = withBootPriority(ctx, bootForPool)
	img, release, err := m.ensureImage(ctx, key.Image)
	if err != nil {
		return nil, err
	}
	defer release()
	rec := &record{ID: uuid.NewString(), Image: key.Image, ImageID: img.ID, Runtime: m.rts.Default().Name(),
		CPUs: key.Shape.CPUs, MemoryMB: key.Shape.MemoryMB, Network: key.Shape.Network,
		IdleTimeoutSecs: m.cfg.DefaultIdleTimeoutSecs, CreatedAt: time.Now().UTC()}
	sb, err := m.bootSandbox(ctx, rec, img, nil)
	if err != nil {
		return nil, err
	}
	if err := sb.transition(Pooled); err != nil {
		c.Discard(sb, warmpool.End("could not join the pool"))
		return nil, err
	}
	return sb, nil
}

func (poolCore) Info(sb *sandbox) poolsvc.Info {
	return poolsvc.Info{ID: sb.rec.ID, ImageID: sb.rec.ImageID, Network: sb.rec.Network, Forwarded: sb.rec.forwarded}
}
func (poolCore) Conn(sb *sandbox) (runtime.Instance, *agentclient.Client) { return sb.conn() }
func (poolCore) Ended(sb *sandbox) runtime.End                            { return endOf(sb.conn()) }
func (poolCore) Request(sb *sandbox, argv []string, timeoutMs uint64) (*agentv1.ExecRequest, error) {
	return sb.execRequest(argv, nil, "", nil, timeoutMs, "")
}
func (c poolCore) SetEgress(ctx context.Context, sb *sandbox, p *api.EgressPolicy) error {
	return handle{m: c.m, sb: sb}.SetEgress(ctx, p)
}

// Adopt records claimed sb as the caller's; sb is not registered yet.
func (c poolCore) Adopt(sb *sandbox, cl poolsvc.Claimed) error {
	rec := &sb.rec
	rec.Owner, rec.Env, rec.CPUs, rec.MemoryMB = cl.Owner, cl.Env, cl.CPUs, cl.MemoryMB
	if rec.Network {
		rec.unforwarded = cl.Unforwarded
	}
	applyTerms(rec, cl.Terms)
	rec.CreatedAt = time.Now().UTC()
	sb.baseEnv = baseEnv(sb.user, sb.image, rec.Env)
	sb.touch()
	if err := c.m.admit(sb); err != nil {
		c.m.log.Error("admitting a warm pool sandbox", "sandbox", rec.ID, "err", err)
		return err
	}
	return nil
}

// Discard ends a sandbox that left the pool without being claimed and
// tears it down in the background (Close waits for it).
func (c poolCore) Discard(sb *sandbox, end runtime.End) <-chan struct{} {
	return c.m.stopAsync(sb, end)
}

// Free is the room live sandboxes and creates in progress leave under
// max_concurrent_sandboxes; m.mu is held.
func (c poolCore) Free() int { return c.m.cfg.MaxConcurrentSandboxes - c.m.liveLocked() - c.m.reserved }

// Closed reports whether the manager is closing; m.mu is held.
func (c poolCore) Closed() bool { return c.m.closed }

// Built reports whether image is in the cache, ready.
func (c poolCore) Built(name string) bool { return c.m.images.Status(name).State == image.StateReady }

// WarmPool reports the warm pool of every image that has one planned, holds
// sandboxes or was claimed from, sorted by image; nil without a pool.
func (m *Manager) WarmPool() []warmpool.Stat { return m.pool.Stats() }

// SetWarmPool resizes the warm pool live to cfg's warm_pool keys (issue
// 41: 4); false when m runs without a pool, which only a restart adds.
func (m *Manager) SetWarmPool(cfg config.Config) bool { return m.pool.Reconfigure(cfg) }
