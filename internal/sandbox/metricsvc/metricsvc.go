// Package metricsvc is the metrics service (sandbox::metrics and its
// stream, which functions runs over it): a live sandbox's resource use
// from its instance (Handle.Stats) beside its size and activity
// (Handle.Vitals). It reaches a sandbox only through sandbox.Sandboxes.
package metricsvc

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Limits are the daemon's limits every sandbox gets, reported beside its
// use.
type Limits struct {
	// WritableLayerMB is writable_layer_mb (0: unlimited).
	WritableLayerMB uint64
	// Pids is pids_limit.
	Pids int64
}

// Service answers sandbox::metrics (functions.SandboxMetrics).
type Service struct {
	sbs     sandbox.Sandboxes
	limits  Limits
	history histories
}

// New is the metrics service over sbs.
func New(sbs sandbox.Sandboxes, limits Limits) *Service {
	return &Service{sbs: sbs, limits: limits}
}

// Metrics reports a live sandbox's resource use from its cgroups, and
// keeps it as a sample (history.go); with a time range, the samples kept
// in it too, which a paused sandbox still answers. Reading metrics is not
// activity: it does not keep a sandbox from the reaper.
func (s *Service) Metrics(ctx context.Context, req api.MetricsRequest) (api.MetricsResponse, error) {
	start, end, err := timeRange(req)
	if err != nil {
		return api.MetricsResponse{}, err
	}
	ranged := req.Start != "" || req.End != ""
	h, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseRead)
	switch {
	case errdefs.Is(err, errdefs.CodePaused) && ranged:
		return api.MetricsResponse{SandboxID: req.SandboxID, Samples: s.history.between(req.SandboxID, start, end)}, nil
	case errdefs.Is(err, errdefs.CodeStopped):
		s.history.forget(req.SandboxID)
		return api.MetricsResponse{}, err
	case err != nil:
		return api.MetricsResponse{}, err
	}
	defer release()
	m, err := s.read(h)
	if err != nil {
		return m, err
	}
	s.history.record(m, h.Vitals().CreatedAt, time.Now())
	if ranged {
		m.Samples = s.history.between(m.SandboxID, start, end)
	}
	return m, nil
}

// read is h's resource use now.
func (s *Service) read(h sandbox.Handle) (api.MetricsResponse, error) {
	var err error
	v := h.Vitals()
	var st runtime.Stats
	if !v.Hibernated { // a hibernated sandbox uses nothing
		if st, err = h.Stats(); err != nil {
			return api.MetricsResponse{}, err
		}
	}
	now := time.Now()
	return api.MetricsResponse{
		SandboxID:        h.ID(),
		CPUSeconds:       st.CPUSeconds,
		MemoryBytes:      st.MemoryBytes,
		MemoryLimitBytes: uint64(v.MemoryMB) << 20,
		Pids:             st.Pids,
		DiskBytes:        st.DiskBytes,
		DiskLimitBytes:   s.limits.WritableLayerMB << 20,
		PidsLimit:        s.limits.Pids,
		CPUs:             v.CPUs,
		AgeSecs:          uint64(now.Sub(v.CreatedAt).Seconds()),
		IdleSecs:         uint64(now.Sub(v.IdleSince).Seconds()),
		ExecInFlight:     v.ExecInFlight,
	}, nil
}
