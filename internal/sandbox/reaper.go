package sandbox

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/idle"
)

// newReaper builds m's idle reaper (package idle), not yet running.
func newReaper(m *Manager) *idle.Reaper[*sandbox] {
	return idle.New[*sandbox](m.cfg, reapCore{m}, m.log)
}

// reapCore is the manager as the idle reaper's idle.Core.
type reapCore struct{ m *Manager }

func (c reapCore) Sandboxes() []idle.Sandbox[*sandbox] {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	out := make([]idle.Sandbox[*sandbox], 0, len(c.m.sandboxes))
	for _, sb := range c.m.sandboxes {
		rec := sb.snapshotRecord()
		st, pausedAt, expiresAt := sb.lifeTimes()
		out = append(out, idle.Sandbox[*sandbox]{
			S: sb, ID: rec.ID, Stopped: rec.Stopped, StoppedAt: rec.StoppedAt,
			Running: st == Running, Paused: st == Paused, PausedAt: pausedAt, ExpiresAt: expiresAt,
			IdleTimeoutSecs: rec.IdleTimeoutSecs, IdleSince: sb.idleSince(), Execs: len(sb.slots), OnIdle: rec.OnIdle,
		})
	}
	return out
}

func (c reapCore) Stop(sb *sandbox, end runtime.End) <-chan struct{} { return c.m.stopAsync(sb, end) }
func (c reapCore) CanPause(sb *sandbox) bool {
	if sb.snapshotRecord().OnIdle == api.OnIdlePauseFiles {
		return c.m.abilitiesOf(sb).Layer
	}
	return c.m.abilitiesOf(sb).Pause
}
func (c reapCore) Touch(sb *sandbox) { sb.touch() }
func (c reapCore) Go(f func())       { c.m.destroying.Go(f) }

func (c reapCore) Pause(sb *sandbox) error {
	pause := c.m.freeze
	if sb.snapshotRecord().OnIdle == api.OnIdlePauseFiles {
		pause = hibernation{c.m, true}.hibernate
	}
	_, err := pause(sb)
	return err
}

// Forget drops a stopped sandbox (or its tombstone) from the manager and
// the store; its teardown, if still running, goes on (Close waits for it).
func (c reapCore) Forget(sb *sandbox) error {
	c.m.mu.Lock()
	if cur, ok := c.m.sandboxes[sb.rec.ID]; ok && cur.isStopped() {
		delete(c.m.sandboxes, sb.rec.ID)
	}
	c.m.mu.Unlock()
	return c.m.store.remove(sb.rec.ID)
}

// outputCheckTimeout bounds the reaper's question to an agent.
const outputCheckTimeout = 5 * time.Second

// Output sums what sb's processes have written to stdout and stderr.
func (c reapCore) Output(sb *sandbox) (int64, bool) {
	ac := sb.client()
	if ac == nil { // no agent connection (a unit test's sandbox, or a lost agent)
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), outputCheckTimeout)
	defer cancel()
	procs, err := ac.List(ctx)
	if err != nil {
		return 0, false
	}
	var total int64
	for _, p := range procs {
		total += max(p.GetStdoutEnd(), 0) + max(p.GetStderrEnd(), 0)
	}
	return total, true
}
