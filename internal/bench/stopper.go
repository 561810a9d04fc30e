package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// stopper stops sandboxes without waiting, as a client in a hurry would,
// and follows each teardown in the background; at most a fixed number of
// teardowns are under way at once, so stopped sandboxes never pile up
// against the daemon's limits.
type stopper struct {
	c *client.Client
	// slots holds one token per teardown under way.
	slots chan struct{}
	wg    sync.WaitGroup

	// mu guards errs.
	mu   sync.Mutex
	errs []error
}

func newStopper(c *client.Client, maxPending int) *stopper {
	return &stopper{c: c, slots: make(chan struct{}, maxPending)}
}

// stop stops sandbox id with wait=false once fewer than the maximum of
// teardowns are under way. It runs even when ctx has ended (an
// interrupted benchmark still cleans up); failures are reported by drain.
func (s *stopper) stop(ctx context.Context, id string) {
	ctx = context.WithoutCancel(ctx)
	s.slots <- struct{}{}
	sctx, cancel := context.WithTimeout(ctx, stopTimeout)
	if _, err := s.c.Stop(sctx, id, false); err != nil {
		cancel()
		<-s.slots
		s.fail(fmt.Errorf("stopping sandbox %s: %w", id, err))
		return
	}
	s.wg.Go(func() {
		defer func() { <-s.slots }()
		defer cancel()
		// Stopping again with wait returns once the teardown is over; a
		// sandbox already forgotten is gone too.
		_, err := s.c.Stop(sctx, id, true)
		var env *api.ErrorEnvelope
		if err != nil && !(errors.As(err, &env) && env.Code == string(errdefs.CodeNotFound)) {
			s.fail(fmt.Errorf("waiting for sandbox %s to stop: %w", id, err))
		}
	})
}

func (s *stopper) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// drain waits for every teardown under way and returns the failures since
// the last drain.
func (s *stopper) drain() error {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}
