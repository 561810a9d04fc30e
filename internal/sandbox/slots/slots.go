// Package slots is a counting semaphore whose waiters are served by
// priority, in arrival order within one: the core's boot slots
// (max_concurrent_boots), which serve creates before warm pool refills.
package slots

import (
	"context"
	"slices"
	"sync"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Slots is a counting semaphore of size slots; priority 0 is served first.
type Slots struct {
	mu   sync.Mutex
	size int
	// used counts the slots held, waiting the holders in line by
	// priority; guarded by mu.
	used    int
	waiting [][]*waiter
}

// waiter is one holder in line: ready is closed when it is handed a slot
// (granted is set then, under Slots.mu).
type waiter struct {
	ready   chan struct{}
	granted bool
}

// New is a semaphore of size slots, for priorities 0 to priorities-1.
func New(size, priorities int) *Slots {
	return &Slots{size: size, waiting: make([][]*waiter, priorities)}
}

// Acquire takes a slot at priority prio, waiting in line until one is
// free, ctx ends or stop is closed (S301: the daemon shuts down).
func (s *Slots) Acquire(ctx context.Context, prio int, stop <-chan struct{}) (release func(), err error) {
	s.mu.Lock()
	if s.used < s.size && !s.queuedAhead(prio) {
		s.used++
		s.mu.Unlock()
		return s.releaser(), nil
	}
	w := &waiter{ready: make(chan struct{})}
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
	s.waiting[prio] = slices.DeleteFunc(s.waiting[prio], func(x *waiter) bool { return x == w })
	s.mu.Unlock()
	return nil, err
}

// Waiting counts the holders in line at priority prio.
func (s *Slots) Waiting(prio int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting[prio])
}

// queuedAhead reports whether a holder waits that goes before one of
// prio; s.mu must be held.
func (s *Slots) queuedAhead(prio int) bool {
	for p := range prio + 1 {
		if len(s.waiting[p]) > 0 {
			return true
		}
	}
	return false
}

// releaser returns the release of one slot, which only its first call
// does.
func (s *Slots) releaser() func() {
	var once sync.Once
	return func() { once.Do(s.release) }
}

// release hands a slot to the first holder in line, or frees it.
func (s *Slots) release() {
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
