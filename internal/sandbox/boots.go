package sandbox

// Boot slots: a burst of creates boots with bounded parallelism. Each boot
// (the runtime start until the agent answers) takes a slot of
// max_concurrent_boots (the host's CPUs by default); the others wait in
// line, creates before warm pool refills, and their boot timeout starts
// only once they hold a slot, so that a create never times out for the
// boots queued ahead of it while the host is making progress.

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
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

// bootSlots is a counting semaphore of size slots whose waiters are served
// by priority, in arrival order within one.
type bootSlots struct {
	mu   sync.Mutex
	size int
	// used counts the slots held, waiting the boots in line; guarded by
	// mu.
	used    int
	waiting [bootPriorities][]*bootWaiter
}

// bootWaiter is one boot in line: ready is closed when it is handed a
// slot (granted is set then, under bootSlots.mu).
type bootWaiter struct {
	ready   chan struct{}
	granted bool
}

// acquire takes a slot for a boot of priority prio, waiting in line until
// one is free, ctx ends or stop is closed (S301: the daemon shuts down).
func (s *bootSlots) acquire(ctx context.Context, prio bootPriority, stop <-chan struct{}) (release func(), err error) {
	s.mu.Lock()
	if s.used < s.size && !s.queuedAhead(prio) {
		s.used++
		s.mu.Unlock()
		return s.releaser(), nil
	}
	w := &bootWaiter{ready: make(chan struct{})}
	s.waiting[prio] = append(s.waiting[prio], w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return s.releaser(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-stop:
		err = errdefs.ShuttingDown()
	}
	s.mu.Lock()
	if w.granted {
		s.mu.Unlock()
		s.release()
		return nil, err
	}
	s.waiting[prio] = slices.DeleteFunc(s.waiting[prio], func(x *bootWaiter) bool { return x == w })
	s.mu.Unlock()
	return nil, err
}

// queuedAhead reports whether a boot waits that goes before one of prio;
// s.mu must be held.
func (s *bootSlots) queuedAhead(prio bootPriority) bool {
	for p := range prio + 1 {
		if len(s.waiting[p]) > 0 {
			return true
		}
	}
	return false
}

// releaser returns the release of one slot, which only its first call
// does.
func (s *bootSlots) releaser() func() {
	var once sync.Once
	return func() { once.Do(s.release) }
}

// release hands a slot to the first boot in line, or frees it.
func (s *bootSlots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.waiting {
		if len(s.waiting[p]) > 0 {
			w := s.waiting[p][0]
			s.waiting[p] = slices.Delete(s.waiting[p], 0, 1)
			w.granted = true
			close(w.ready)
			return
		}
	}
	s.used--
}
