package sandbox

import "time"

// reapInterval is how often the reaper looks for idle and expired sandboxes.
const reapInterval = 10 * time.Second

// reaper stops sandboxes idle past their timeout and forgets stopped ones
// past the retention window, every reapInterval until Close.
func (m *Manager) reaper() {
	defer close(m.reaperDone)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stopReaper:
			return
		case now := <-t.C:
			m.reap(now)
		}
	}
}

// reap runs one pass of the reaper at time now.
func (m *Manager) reap(now time.Time) {
	retention := time.Duration(m.cfg.StoppedRetentionSecs) * time.Second
	maxExec := time.Duration(m.cfg.MaxExecTimeoutMs) * time.Millisecond
	m.mu.Lock()
	var idle, expired []*sandbox
	for _, sb := range m.sandboxes {
		rec := sb.snapshotRecord()
		if rec.Stopped {
			if now.Sub(rec.StoppedAt) > retention {
				expired = append(expired, sb)
			}
			continue
		}
		limit := time.Duration(rec.IdleTimeoutSecs) * time.Second
		if len(sb.slots) > 0 {
			// An exec in flight spares the sandbox until it could have ended.
			limit += maxExec + time.Minute
		}
		if now.Sub(sb.idleSince()) > limit {
			idle = append(idle, sb)
		}
	}
	for _, sb := range expired {
		delete(m.sandboxes, sb.rec.ID)
	}
	m.mu.Unlock()
	for _, sb := range expired {
		if err := m.store.remove(sb.rec.ID); err != nil {
			m.log.Error("forgetting stopped sandbox", "sandbox", sb.rec.ID, "err", err)
		}
	}
	for _, sb := range idle {
		m.log.Info("reaping idle sandbox", "sandbox", sb.rec.ID, "idle_timeout_secs", sb.rec.IdleTimeoutSecs)
		m.stopAsync(sb, "idle timeout")
	}
}
