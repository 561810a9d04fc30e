package sandbox

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// reapInterval is the longest the reaper sleeps between passes.
const reapInterval = 10 * time.Second

// minReapInterval bounds how often the reaper runs when idle timeouts are
// very short.
const minReapInterval = 250 * time.Millisecond

// reaper stops sandboxes idle past their timeout and forgets stopped ones
// past the retention window, until Close. It runs every reapInterval, or
// every half of the shortest idle timeout of a live sandbox when that is
// shorter, so that a sandbox is reaped at most 1.5 idle timeouts after its
// last activity. A create with a short idle timeout wakes it (wake) to
// shorten the current sleep. It works on the core's sandboxes, under
// Manager.mu.
type reaper struct {
	m *Manager
	// stop ends the loop, which closes done; soon wakes it to recompute
	// its interval.
	stop, done, soon chan struct{}
}

// newReaper is m's reaper, not yet running (run).
func newReaper(m *Manager) *reaper {
	return &reaper{m: m, stop: make(chan struct{}), done: make(chan struct{}), soon: make(chan struct{}, 1)}
}

// run is the reaper's loop, until close.
func (r *reaper) run() {
	defer close(r.done)
	t := time.NewTimer(r.every())
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.soon:
		case now := <-t.C:
			r.reap(now)
		}
		t.Reset(r.every())
	}
}

// close ends the loop and waits for it.
func (r *reaper) close() {
	close(r.stop)
	<-r.done
}

// wake makes the reaper recompute its interval now.
func (r *reaper) wake() {
	select {
	case r.soon <- struct{}{}:
	default:
	}
}

// every is the reaper's current interval: reapInterval, or half the
// shortest idle timeout of a live sandbox, or the time until the next
// lifetime or paused retention ends, whichever is shortest.
func (r *reaper) every() time.Duration {
	m := r.m
	every := reapInterval
	retention := time.Duration(m.cfg.PausedRetentionSecs) * time.Second
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sb := range m.sandboxes {
		st, pausedAt, expiresAt := sb.lifeTimes()
		switch {
		case st == Running:
			every = min(every, time.Duration(sb.rec.IdleTimeoutSecs)*time.Second/2)
			if !expiresAt.IsZero() {
				every = min(every, time.Until(expiresAt))
			}
		case st == Paused:
			every = min(every, time.Until(pausedAt.Add(retention)))
		}
	}
	return max(every, minReapInterval)
}

// reap runs one pass of the reaper at time now. A running sandbox past
// its lifetime, or paused longer than paused_retention_secs, is stopped
// and listed as stopped (S004 with its end) for stopped_retention_secs,
// then forgotten. An idle one is paused when it was created with on_idle:
// pause; otherwise it is stopped and, once its teardown is over (a moment,
// during which calls get S004 "idle timeout"), forgotten: later calls get
// S002, as for an unknown id. Until then it still holds
// its image against removal. A sandbox with execs in flight is spared
// until its idle timeout plus max_exec_timeout_ms plus a minute, the
// longest an exec could have run.
func (r *reaper) reap(now time.Time) {
	m := r.m
	retention := time.Duration(m.cfg.StoppedRetentionSecs) * time.Second
	pausedRetention := time.Duration(m.cfg.PausedRetentionSecs) * time.Second
	maxExec := time.Duration(m.cfg.MaxExecTimeoutMs) * time.Millisecond
	m.mu.Lock()
	var idle, expired []*sandbox
	ends := map[*sandbox]runtime.End{}
	for _, sb := range m.sandboxes {
		rec := sb.snapshotRecord()
		if rec.Stopped {
			if now.Sub(rec.StoppedAt) > retention {
				expired = append(expired, sb)
			}
			continue
		}
		st, pausedAt, expiresAt := sb.lifeTimes()
		if st == Paused && now.Sub(pausedAt) > pausedRetention {
			ends[sb] = endPausedTooLong
		}
		if st != Running {
			continue
		}
		if !expiresAt.IsZero() && !now.Before(expiresAt) {
			ends[sb] = endLifetime
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
	m.mu.Unlock()
	for _, sb := range expired {
		r.forget(sb)
	}
	for sb, end := range ends {
		m.stopAsync(sb, end)
	}
	for _, sb := range idle {
		if wroteOutput(sb) {
			sb.touch()
			continue
		}
		m.log.Info("reaping idle sandbox", "sandbox", sb.rec.ID, "idle_timeout_secs", sb.rec.IdleTimeoutSecs,
			"idle_secs", int64(now.Sub(sb.idleSince()).Seconds()), "exec_in_flight", len(sb.slots), "on_idle", sb.rec.OnIdle)
		if sb.rec.OnIdle == api.OnIdlePause && m.abilitiesOf(sb).Pause {
			m.destroying.Go(func() {
				if _, err := m.freeze(sb); err != nil {
					m.log.Warn("pausing an idle sandbox", "sandbox", sb.rec.ID, "err", err)
				}
			})
			continue
		}
		done := m.stopAsync(sb, endIdle)
		m.destroying.Go(func() {
			<-done
			r.forget(sb)
		})
	}
}

// forget drops a stopped sandbox (or its tombstone) from the manager and
// the store; its teardown, if still running, goes on (Close waits for it).
func (r *reaper) forget(sb *sandbox) {
	m := r.m
	m.mu.Lock()
	if cur, ok := m.sandboxes[sb.rec.ID]; ok && cur.isStopped() {
		delete(m.sandboxes, sb.rec.ID)
	}
	m.mu.Unlock()
	if err := m.store.remove(sb.rec.ID); err != nil {
		m.log.Error("forgetting stopped sandbox", "sandbox", sb.rec.ID, "err", err)
	}
}

// outputCheckTimeout bounds the reaper's question to an agent.
const outputCheckTimeout = 5 * time.Second

// wroteOutput reports whether sb's processes wrote output since the
// reaper last asked: process output is activity, as API calls are, so a
// background server that logs stays alive while a silent `sleep infinity`
// does not. Only a sandbox about to be reaped is asked; one whose agent
// does not answer is reaped.
func wroteOutput(sb *sandbox) bool {
	c := sb.client()
	if c == nil { // no agent connection (a unit test's sandbox, or a lost agent)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), outputCheckTimeout)
	defer cancel()
	procs, err := c.List(ctx)
	if err != nil {
		return false
	}
	var total int64
	for _, p := range procs {
		total += max(p.GetStdoutEnd(), 0) + max(p.GetStderrEnd(), 0)
	}
	return sb.outputSeen.Swap(total) != total
}
