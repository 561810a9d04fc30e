package sandbox

import (
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

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
