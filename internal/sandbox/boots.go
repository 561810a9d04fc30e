package sandbox

// Boot slots: a burst of creates boots with bounded parallelism. Each boot
// (the runtime start until the agent answers) takes a slot of
// max_concurrent_boots (the host's CPUs by default: package slots); the
// others wait in line, creates before warm pool refills, and their boot
// timeout starts only once they hold a slot, so that a create never times
// out for the boots queued ahead of it while the host is making progress.

import (
	"context"
	goruntime "runtime"

	"github.com/hutch-dev/hutch/internal/config"
)

// bootPriority orders the boots waiting for a slot.
type bootPriority int

const (
	// bootForCreate is a create's boot (or a restore's), served first.
	bootForCreate bootPriority = iota
	// bootForPool is a warm pool refill.
	bootForPool
	bootPriorities
)

// bootPriorityKey carries a boot's priority in its context.
type bootPriorityKey struct{}

// withBootPriority marks the boots of ctx with prio.
func withBootPriority(ctx context.Context, prio bootPriority) context.Context {
	return context.WithValue(ctx, bootPriorityKey{}, prio)
}

// priorityOf is the priority of a boot under ctx: bootForCreate unless
// marked.
func priorityOf(ctx context.Context) bootPriority {
	if p, ok := ctx.Value(bootPriorityKey{}).(bootPriority); ok {
		return p
	}
	return bootForCreate
}

// bootSlotsOf is the boot parallelism of cfg: max_concurrent_boots, or the
// host's CPUs when 0.
func bootSlotsOf(cfg config.Config) int {
	if cfg.MaxConcurrentBoots > 0 {
		return cfg.MaxConcurrentBoots
	}
	return max(1, goruntime.NumCPU())
}
