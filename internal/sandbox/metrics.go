package sandbox

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Metrics reports a live sandbox's resource use from its cgroups. Reading
// metrics is not activity: it does not keep a sandbox from the reaper.
func (m *Manager) Metrics(ctx context.Context, req api.MetricsRequest) (api.MetricsResponse, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseRead)
	if err != nil {
		return api.MetricsResponse{}, err
	}
	defer release()
	var st runtime.Stats
	if !sb.isHibernated() { // a hibernated sandbox uses nothing
		if st, err = m.stats(sb); err != nil {
			return api.MetricsResponse{}, err
		}
	}
	now := time.Now()
	return api.MetricsResponse{
		SandboxID:        sb.rec.ID,
		CPUSeconds:       st.CPUSeconds,
		MemoryBytes:      st.MemoryBytes,
		MemoryLimitBytes: uint64(sb.rec.MemoryMB) << 20,
		Pids:             st.Pids,
		DiskBytes:        st.DiskBytes,
		DiskLimitBytes:   uint64(m.cfg.WritableLayerMB) << 20,
		PidsLimit:        m.cfg.PidsLimit,
		CPUs:             sb.rec.CPUs,
		AgeSecs:          uint64(now.Sub(sb.rec.CreatedAt).Seconds()),
		IdleSecs:         uint64(now.Sub(sb.idleSince()).Seconds()),
		ExecInFlight:     len(sb.slots),
	}, nil
}

// stats reads sb's resource use from its instance.
func (m *Manager) stats(sb *sandbox) (runtime.Stats, error) {
	inst, _ := sb.conn()
	sr, ok := inst.(runtime.StatsReader)
	if !ok {
		return runtime.Stats{}, errdefs.New(errdefs.CodeInternal, "the %s runtime does not report resource use", sb.rec.Runtime)
	}
	st, err := sr.Stats()
	if err != nil {
		if st, end := sb.current(); st != Running {
			return runtime.Stats{}, notRunning(sb.rec.ID, st, end)
		}
		return runtime.Stats{}, errdefs.Wrap(errdefs.CodeInternal, err, "reading resource use of sandbox "+sb.rec.ID)
	}
	return st, nil
}

// Live is the number of live (not stopped) sandboxes of every owner, for
// the daemon's gauges.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveLocked()
}
