// Package idle is the idle reaper: the policy that ends sandboxes nobody
// uses. A pass stops a running sandbox past its lifetime (timeout_secs,
// renewed by set_timeout) or paused longer than paused_retention_secs;
// pauses an idle one created with on_idle: pause, or stops and then
// forgets it; and forgets stopped ones past stopped_retention_secs.
// Process output counts as activity: a sandbox about to be reaped whose
// processes wrote since the last look is kept.
//
// The sandboxes are the type parameter S; the owner (the core,
// internal/sandbox) lists them and stops, pauses and forgets them
// through Core.
package idle

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Interval is the longest the reaper sleeps between passes.
const Interval = 10 * time.Second

// MinInterval bounds how often the reaper runs when idle timeouts are
// very short.
const MinInterval = 250 * time.Millisecond

// The ends a pass gives.
var (
	EndIdle     = runtime.End{Cause: runtime.CauseIdle, Detail: "idle timeout"}
	EndLifetime = runtime.End{Cause: runtime.CauseLifetime, Detail: "its lifetime (timeout_secs) ran out"}
	// EndPausedTooLong ends a sandbox paused past paused_retention_secs.
	EndPausedTooLong = runtime.End{Cause: runtime.CauseIdle, Detail: "paused longer than paused_retention_secs"}
)

// Sandbox is what a pass knows of one sandbox.
type Sandbox[S any] struct {
	S  S
	ID string
	// Stopped is set once it has ended, at StoppedAt.
	Stopped   bool
	StoppedAt time.Time
	// Running and Paused are its state (neither while booting or ended).
	Running, Paused bool
	// PausedAt is when it was paused (while it is); ExpiresAt when its
	// lifetime ends (zero: none).
	PausedAt, ExpiresAt time.Time
	IdleTimeoutSecs     uint64
	// IdleSince is its last activity.
	IdleSince time.Time
	// Execs is the number of execs in flight.
	Execs  int
	OnIdle string
}

// pauses reports whether sb's on_idle pauses it (at any depth) rather
// than stopping it.
func (sb Sandbox[S]) pauses() bool {
	return sb.OnIdle == api.OnIdlePause || sb.OnIdle == api.OnIdlePauseFiles
}

// Core is what the reaper asks of its owner.
type Core[S any] interface {
	// Sandboxes lists every sandbox the core holds, live or stopped.
	Sandboxes() []Sandbox[S]
	// Stop ends s with end (the first end wins) and tears it down in the
	// background; the channel closes when the teardown is over.
	Stop(s S, end runtime.End) <-chan struct{}
	// CanPause reports whether s's runtime can pause it as its on_idle
	// says.
	CanPause(s S) bool
	// Pause pauses s as its on_idle says.
	Pause(s S) error
	// Forget drops s, stopped, from the core and its store.
	Forget(s S) error
	// Output is the output s's processes have written so far; false when
	// its agent does not answer.
	Output(s S) (int64, bool)
	// Touch counts activity on s.
	Touch(s S)
	// Go runs f in the background; the core's Close waits for it.
	Go(f func())
}

// Reaper runs passes until Close. It runs every Interval, or every half
// of the shortest idle timeout of a live sandbox when that is shorter, so
// that a sandbox is reaped at most 1.5 idle timeouts after its last
// activity. A create with a short idle timeout wakes it (Wake) to shorten
// the current sleep.
type Reaper[S comparable] struct {
	core                                Core[S]
	log                                 *slog.Logger
	retention, pausedRetention, maxExec time.Duration
	// stop ends the loop, which closes done; soon wakes it to recompute
	// its interval.
	stop, done, soon chan struct{}

	mu sync.Mutex
	// seen is the output each sandbox's processes had written at the
	// last look (wroteOutput).
	seen map[S]int64
}

// New is a reaper of core's sandboxes under cfg (stopped_retention_secs,
// paused_retention_secs, max_exec_timeout_ms), not yet running (Run).
func New[S comparable](cfg config.Config, core Core[S], log *slog.Logger) *Reaper[S] {
	return &Reaper[S]{
		core: core, log: log,
		retention:       time.Duration(cfg.StoppedRetentionSecs) * time.Second,
		pausedRetention: time.Duration(cfg.PausedRetentionSecs) * time.Second,
		maxExec:         time.Duration(cfg.MaxExecTimeoutMs) * time.Millisecond,
		stop:            make(chan struct{}), done: make(chan struct{}), soon: make(chan struct{}, 1),
		seen: map[S]int64{},
	}
}

// Run is the reaper's loop, until Close.
func (r *Reaper[S]) Run() {
	defer close(r.done)
	next := time.Now().Add(r.Every(time.Now()))
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.soon:
			// A wake (each create makes one) may bring the next pass
			// forward, never put it off: wakes coming faster than the
			// interval would otherwise stop every pass, and with them the
			// forgetting of stopped sandboxes (issue 38: 4).
			if now := time.Now(); now.Add(r.Every(now)).Before(next) {
				next = now.Add(r.Every(now))
			}
		case now := <-t.C:
			r.Reap(now)
			now = time.Now()
			next = now.Add(r.Every(now))
		}
		t.Reset(time.Until(next))
	}
}

// Close ends the loop and waits for it.
func (r *Reaper[S]) Close() {
	close(r.stop)
	<-r.done
}

// Wake makes the reaper recompute its interval now.
func (r *Reaper[S]) Wake() {
	select {
	case r.soon <- struct{}{}:
	default:
	}
}

// Every is the reaper's interval at now: Interval, or half the shortest
// idle timeout of a live sandbox, or the time until the next lifetime or
// paused retention ends, whichever is shortest.
func (r *Reaper[S]) Every(now time.Time) time.Duration {
	every := Interval
	for _, sb := range r.core.Sandboxes() {
		switch {
		case sb.Stopped:
		case sb.Running:
			every = min(every, time.Duration(sb.IdleTimeoutSecs)*time.Second/2)
			if !sb.ExpiresAt.IsZero() {
				every = min(every, sb.ExpiresAt.Sub(now))
			}
		case sb.Paused:
			every = min(every, sb.PausedAt.Add(r.pausedRetention).Sub(now))
		}
	}
	return max(every, MinInterval)
}

// Reap runs one pass at time now. A running sandbox past its lifetime,
// or paused longer than paused_retention_secs, is stopped and listed as
// stopped (S004 with its end) for stopped_retention_secs, then forgotten.
// An idle one is paused when it was created with on_idle: pause (and its
// runtime can); otherwise it is stopped and, once its teardown is over (a
// moment, during which calls get S004 "idle timeout"), forgotten: later
// calls get S002, as for an unknown id. Until then it still holds its
// image against removal. A sandbox with execs in flight is spared until
// its idle timeout plus max_exec_timeout_ms plus a minute, the longest an
// exec could have run.
func (r *Reaper[S]) Reap(now time.Time) {
	all := r.core.Sandboxes()
	var idle, expired, expiredPause []Sandbox[S]
	ends := map[S]runtime.End{}
	for _, sb := range all {
		if sb.Stopped {
			if now.Sub(sb.StoppedAt) > r.retention {
				expired = append(expired, sb)
			}
			continue
		}
		if sb.Paused && now.Sub(sb.PausedAt) > r.pausedRetention {
			ends[sb.S] = EndPausedTooLong
		}
		if !sb.Running {
			continue
		}
		if !sb.ExpiresAt.IsZero() && !now.Before(sb.ExpiresAt) {
			if sb.pauses() && r.core.CanPause(sb.S) {
				expiredPause = append(expiredPause, sb) // its resume starts a new lifetime
			} else {
				ends[sb.S] = EndLifetime
			}
			continue
		}
		limit := time.Duration(sb.IdleTimeoutSecs) * time.Second
		if sb.Execs > 0 {
			// An exec in flight spares the sandbox until it could have ended.
			limit += r.maxExec + time.Minute
		}
		if now.Sub(sb.IdleSince) > limit {
			idle = append(idle, sb)
		}
	}
	r.prune(all)
	for _, sb := range expired {
		r.forget(sb)
	}
	for s, end := range ends {
		r.core.Stop(s, end)
	}
	for _, sb := range expiredPause {
		r.log.Info("pausing a sandbox at the end of its lifetime", "sandbox", sb.ID)
		r.pause(sb)
	}
	for _, sb := range idle {
		if r.wroteOutput(sb.S) {
			r.core.Touch(sb.S)
			continue
		}
		r.log.Info("reaping idle sandbox", "sandbox", sb.ID, "idle_timeout_secs", sb.IdleTimeoutSecs,
			"idle_secs", int64(now.Sub(sb.IdleSince).Seconds()), "exec_in_flight", sb.Execs, "on_idle", sb.OnIdle)
		if sb.pauses() && r.core.CanPause(sb.S) {
			r.pause(sb)
			continue
		}
		done := r.core.Stop(sb.S, EndIdle)
		r.core.Go(func() {
			<-done
			r.forget(sb)
		})
	}
}

// pause pauses sb in the background; a failure is logged, and the next
// pass tries again.
func (r *Reaper[S]) pause(sb Sandbox[S]) {
	r.core.Go(func() {
		if err := r.core.Pause(sb.S); err != nil {
			r.log.Warn("pausing a sandbox", "sandbox", sb.ID, "err", err)
		}
	})
}

// forget drops a stopped sandbox (or its tombstone) from the core and
// its store; its teardown, if still running, goes on.
func (r *Reaper[S]) forget(sb Sandbox[S]) {
	if err := r.core.Forget(sb.S); err != nil {
		r.log.Error("forgetting stopped sandbox", "sandbox", sb.ID, "err", err)
	}
}

// wroteOutput reports whether s's processes wrote output since the
// reaper last asked: process output is activity, as API calls are, so a
// background server that logs stays alive while a silent `sleep infinity`
// does not. Only a sandbox about to be reaped is asked; one whose agent
// does not answer is reaped.
func (r *Reaper[S]) wroteOutput(s S) bool {
	total, ok := r.core.Output(s)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.seen[s]
	r.seen[s] = total
	return was != total
}

// prune drops the output marks of sandboxes the core no longer holds.
func (r *Reaper[S]) prune(all []Sandbox[S]) {
	held := make(map[S]bool, len(all))
	for _, sb := range all {
		held[sb.S] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.seen {
		if !held[s] {
			delete(r.seen, s)
		}
	}
}
