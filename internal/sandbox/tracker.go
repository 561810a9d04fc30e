package sandbox

import "sync"

// tracker counts background work (teardowns) so that Close can wait for
// it. Unlike sync.WaitGroup it allows work to start while Wait waits,
// which a sandbox ending on its own during Close does; Wait then waits for
// that work too.
type tracker struct {
	mu   sync.Mutex
	cond *sync.Cond
	// n is the work under way; guarded by mu.
	n int
}

// Go runs f in a new goroutine, counted until it returns.
func (t *tracker) Go(f func()) {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	go func() {
		defer t.done()
		f()
	}()
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.cond != nil {
		t.cond.Broadcast()
	}
}

// Wait returns once no work is under way.
func (t *tracker) Wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.cond.Wait()
	}
}
