package metricsvc

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Sample keeps a sample of every live sandbox each api.MetricsSampleSecs
// until done is closed, so that a range has its samples without reads
// (issue 43: 5). live lists the live sandboxes' owners by id
// (Manager.LiveOwners); a sampled read is not activity, and the histories
// stay bounded as a read's do.
func (s *Service) Sample(done <-chan struct{}, every time.Duration, live func() map[string]string) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for id, owner := range live() {
			s.sampleOne(id, owner)
		}
	}
}

// sampleOne records one sample of sandbox id; a sandbox that cannot be
// read now (paused deeply, stopping) is left out of this period, and a
// stopped one's samples are dropped.
func (s *Service) sampleOne(id, owner string) {
	h, release, err := s.sbs.Acquire(auth.WithOwner(context.Background(), owner), id, sandbox.UseRead)
	if errdefs.Is(err, errdefs.CodeStopped) {
		s.history.forget(id)
	}
	if err != nil {
		return
	}
	defer release()
	if m, err := s.read(h); err == nil {
		s.history.record(m, h.Vitals().CreatedAt, time.Now())
	}
}
