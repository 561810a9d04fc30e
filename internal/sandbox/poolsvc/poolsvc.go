// Package poolsvc is the warm pool's service beside the core: what a pool
// sandbox goes through between its boot and its claim (package warmpool
// keeps the pools, package poolplan sizes them). The core boots,
// records and tears down sandboxes; this package warms a new one up,
// watches it, lowers its limits at a claim, decides which creates a pool
// can serve and gives a claimed network sandbox its create's env and
// egress policy. Like adoptsvc it is a leaf the core calls: the core
// implements Core for its sandboxes S.
//
// A pool sandbox is booted with its pool's shape (cpus, memory and
// whether it has a network) by the pool's refill loop. Until a create
// claims it, it belongs to no owner, is not listed, is never reaped for
// idleness and is not in the metadata store, so a daemon that crashes
// never re-adopts it (start-up reconciliation destroys it with every
// other leftover runtime). A create fits a pool when it asks for no
// volumes, for a network exactly when the pool has one, and for at most
// the pool shape's cpus and memory; claiming applies its env (the core
// keeps env on the host side, so that is free), smaller limits (a cgroup
// update), its egress policy (for a network) and its idle timeout, then
// records it as a sandbox of the caller.
package poolsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/poolplan"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
)

// Core is what the service asks of the sandbox manager about its
// sandboxes S. Only the pool holds a pool sandbox until a claim's Adopt,
// so nothing else changes it meanwhile.
type Core[S any] interface {
	// Boot boots one sandbox of key's image and shape, at the boot
	// priority of a refill, in the Pooled state; on failure it leaves
	// nothing behind.
	Boot(ctx context.Context, key poolplan.Key) (S, error)
	// Info is what the service reads of s.
	Info(s S) Info
	// Conn is s's runtime instance and agent connection.
	Conn(s S) (runtime.Instance, *agentclient.Client)
	// Ended is why s ended, once its instance or its agent is done.
	Ended(s S) runtime.End
	// Request is the agent's request of argv in s, as its image's user,
	// in its env and working directory.
	Request(s S, argv []string, timeoutMs uint64) (*agentv1.ExecRequest, error)
	// SetEgress makes p (nil: none) the egress policy of s, as
	// sandbox::network::update does.
	SetEgress(ctx context.Context, s S, p *api.EgressPolicy) error
	// Adopt records s as the caller's with c; on failure s is torn down.
	Adopt(s S, c Claimed) error
	// Discard, Free, Closed and Built are warmpool.Core's.
	Discard(s S, end runtime.End) <-chan struct{}
	Free() int
	Closed() bool
	Built(image string) bool
}

// Info is what a pool sandbox is to the service.
type Info struct {
	ID string
	// ImageID is the image id it booted from.
	ImageID string
	// Network says it has a network; Forwarded are the host loopback
	// ports its gateway forwards.
	Network   bool
	Forwarded []uint16
}

// Claimed is what a claim makes of a pool sandbox: its owner, its own env
// (pointed at its gateway, for a network) and the ports that env names
// that are not forwarded, its limits and its life terms.
type Claimed struct {
	Owner          string
	Env            []string
	Unforwarded    []uint16
	CPUs, MemoryMB uint32
	Terms          spec.Terms
}

// Network is the part of the sandboxes' networking (the core's
// SandboxNetwork) a claim asks.
type Network interface {
	Gateway(id, owner string, env []string) (forward, refused []uint16)
	Protected(port uint16) bool
	UseGateway(id string, env []string, ports []uint16) []string
}

// Service is the pool of a core's sandboxes S with what a claim needs.
type Service[S any] struct {
	// Pool is nil without a pool.
	Pool *warmpool.Pool[S]
	Core Core[S]
	// Net is nil without a network service.
	Net Network
	Cfg config.Config
	Log *slog.Logger
}

// New builds the pool of core's sandboxes, of cfg (warm_pool,
// warm_pool_auto and their bounds), or nil when it never keeps a
// sandbox. It shares the core's lock mu, because room in the pool is room
// in max_concurrent_sandboxes; parallel bounds its refill boots.
func New[S any](cfg config.Config, core Core[S], mu sync.Locker, log *slog.Logger, parallel int) *warmpool.Pool[S] {
	return warmpool.New[S](cfg, pooled[S]{core}, mu, log, parallel)
}

// Claim takes a pool sandbox for a create whose request and resolved
// limits and terms are given, or returns false when the create should
// boot its own. The sandbox it returns is recorded as the caller's
// (Core.Adopt), and still has to be registered.
func (s Service[S]) Claim(ctx context.Context, req api.CreateRequest, cpus, mem uint32, t spec.Terms) (S, bool) {
	// Volumes are mounted at boot: no pool sandbox has them. A network
	// is pooled (network.go) when the claim can give it the create's
	// policy and gateway.
	fits := func() bool { return len(req.Volumes) == 0 && (!req.Network || s.networkFits(req.Env)) }
	want := poolplan.Shape{CPUs: cpus, MemoryMB: mem, Network: req.Network}
	sb, ok := s.Pool.Claim(ctx, req.Image, want, fits, func(sb S) error {
		// Nobody else sees sb until it is registered.
		info := s.Core.Info(sb)
		c := Claimed{Owner: auth.OwnerFrom(ctx), Env: req.Env, CPUs: cpus, MemoryMB: mem, Terms: t}
		if info.Network {
			if err := s.claimNetwork(ctx, sb, info, req.Egress, &c); err != nil {
				// Fail closed: the sandbox may not keep a policy other
				// than the create's.
				s.Log.Warn("applying a create's network to a warm pool sandbox", "sandbox", info.ID, "err", err)
				return &warmpool.Unfit{Detail: "could not apply the create's network"}
			}
		}
		return s.Core.Adopt(sb, c)
	})
	if !ok {
		return sb, false
	}
	info := s.Core.Info(sb)
	trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("hutch.warm_pool_hit", true))
	s.Log.Debug("sandbox taken from the warm pool", "sandbox", info.ID, "image", req.Image)
	return sb, true
}

// Refresh discards the pool sandboxes of image booted from another image
// id than imageID, for an image pull.
func (s Service[S]) Refresh(image, imageID string) {
	s.Pool.Refresh(image, func(sb S) bool { return s.Core.Info(sb).ImageID != imageID })
}

// pooled is Core as warmpool.Core.
type pooled[S any] struct{ core Core[S] }

var _ warmpool.Core[int] = pooled[int]{}

// Boot boots one pool sandbox of key's image and shape and warms it up.
func (p pooled[S]) Boot(ctx context.Context, key poolplan.Key) (S, error) {
	sb, err := p.core.Boot(ctx, key)
	if err != nil {
		return sb, err
	}
	if err := p.warmUp(ctx, sb); err != nil {
		p.Discard(sb, warmpool.End("its warm-up exec failed"))
		var none S
		return none, err
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
func (p pooled[S]) warmUp(ctx context.Context, sb S) error {
	id := p.core.Info(sb).ID
	areq, err := p.core.Request(sb, []string{"true"}, uint64(warmUpTimeout.Milliseconds()))
	if err != nil {
		return fmt.Errorf("warming up sandbox %s: %w", id, err)
	}
	// The exit status does not matter: in an image without true the
	// spawn path has run all the same.
	_, ac := p.core.Conn(sb)
	if _, err := ac.Exec(ctx, areq); err != nil {
		return fmt.Errorf("warming up sandbox %s: %w", id, err)
	}
	return nil
}

// Alive reports whether a pool sandbox's runtime and agent still run.
func (p pooled[S]) Alive(sb S) bool {
	inst, ac := p.core.Conn(sb)
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
func (p pooled[S]) Wait(sb S, taken <-chan struct{}) (runtime.End, bool) {
	inst, ac := p.core.Conn(sb)
	select {
	case <-taken:
		return runtime.End{}, false
	case <-inst.Done():
	case <-ac.Done():
	}
	return p.core.Ended(sb), true
}

// Resize applies a create's smaller limits to a pool sandbox.
func (p pooled[S]) Resize(sb S, want, shape poolplan.Shape) error {
	inst, _ := p.core.Conn(sb)
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
// tears it down in the background.
func (p pooled[S]) Discard(sb S, end runtime.End) <-chan struct{} { return p.core.Discard(sb, end) }

// Free is the room live sandboxes and creates in progress leave under
// max_concurrent_sandboxes; the core's lock is held.
func (p pooled[S]) Free() int { return p.core.Free() }

// Closed reports whether the core is closing; its lock is held.
func (p pooled[S]) Closed() bool { return p.core.Closed() }

// Built reports whether image is in the cache, ready.
func (p pooled[S]) Built(image string) bool { return p.core.Built(image) }

// ID is a pool sandbox's id.
func (p pooled[S]) ID(sb S) string { return p.core.Info(sb).ID }
