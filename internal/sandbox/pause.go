package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Pause and resume. A freeze stops every task of the sandbox (runsc
// pause) and keeps its memory; its agent session stays open and silent.
// sandbox.op serializes the moves, so that a pause, a resume and an
// auto-resume never interleave; each looks at the state again once it
// holds it.

// pauseTimeout bounds the runtime's part of a pause or resume; the
// caller going away does not cut it short, which would leave the sandbox
// half moved.
const pauseTimeout = 30 * time.Second

// endResumeFailed ends a sandbox that could not be thawed.
func endResumeFailed(err error) runtime.End {
	return runtime.End{Cause: runtime.CauseAgent, Detail: "could not be resumed: " + err.Error()}
}

// Pause freezes a running sandbox (sandbox::pause). Pausing a paused
// sandbox changes nothing.
func (m *Manager) Pause(ctx context.Context, req api.PauseRequest) (api.StateResponse, error) {
	pause := m.freeze
	switch req.Depth {
	case "", api.PauseFreeze:
	case api.PauseHibernate, api.PauseFiles:
		pause = hibernation{m, req.Depth == api.PauseFiles}.hibernate
	default:
		return api.StateResponse{}, errdefs.Malformed("depth must be %q, %q or %q, got %q", api.PauseFreeze, api.PauseHibernate, api.PauseFiles, spec.Clip(req.Depth, 32))
	}
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.StateResponse{}, err
	}
	changed, err := pause(sb)
	if err != nil {
		return api.StateResponse{}, err
	}
	return stateResponse(sb, changed), nil
}

// Resume thaws a paused sandbox (sandbox::resume). Resuming a running
// sandbox changes nothing.
func (m *Manager) Resume(ctx context.Context, req api.ResumeRequest) (api.StateResponse, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.StateResponse{}, err
	}
	changed, err := m.thaw(sb)
	if err != nil {
		return api.StateResponse{}, err
	}
	return stateResponse(sb, changed), nil
}

// stateResponse is the answer of a pause or resume of sb.
func stateResponse(sb *sandbox, changed bool) api.StateResponse {
	st, _ := sb.current()
	return api.StateResponse{SandboxID: sb.rec.ID, State: st.String(), Changed: changed}
}

// pauser is sb's instance as a Pauser: S302 when the runtime cannot pause.
func (m *Manager) pauser(sb *sandbox) (runtime.Pauser, error) {
	inst, _ := sb.conn()
	p, ok := inst.(runtime.Pauser)
	if !ok || !m.abilitiesOf(sb).Pause {
		return nil, unsupported(sb.rec.Runtime, "pause sandboxes")
	}
	return p, nil
}

// freeze moves a running sb to Paused; changed is false when it already
// was. A runtime failure leaves it running.
func (m *Manager) freeze(sb *sandbox) (changed bool, err error) {
	sb.op.Lock()
	defer sb.op.Unlock()
	if st, end := sb.current(); st == Paused {
		if sb.isHibernated() {
			return false, errdefs.New(errdefs.CodePaused, "sandbox %s is paused at depth %s; resume it first", sb.rec.ID, sb.pauseDepth())
		}
		return false, nil
	} else if st != Running {
		return false, notRunning(sb.rec.ID, st, end)
	}
	p, err := m.pauser(sb)
	if err != nil {
		return false, err
	}
	if err := sb.beginPause(); err != nil {
		return false, notRunning(sb.rec.ID, Pausing, runtime.End{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	start := time.Now()
	if err := p.Pause(ctx); err != nil {
		if sb.transition(Running) != nil {
			return false, stoppedError(sb.rec.ID, sb.endNow())
		}
		m.log.Error("pausing sandbox", "sandbox", sb.rec.ID, "err", err)
		return false, errdefs.New(errdefs.CodeInternal, "pausing sandbox %s failed; it is still running", sb.rec.ID)
	}
	if err := sb.markPaused(api.PauseFreeze); err != nil {
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	m.log.Info("sandbox paused", "sandbox", sb.rec.ID, "depth", api.PauseFreeze, "ms", time.Since(start).Milliseconds())
	m.emitFor(sb, api.EventSandboxPaused, map[string]any{"depth": api.PauseFreeze})
	return true, nil
}

// thaw moves a paused sb back to Running; changed is false when it
// already was running. A sandbox that cannot be thawed is ended.
func (m *Manager) thaw(sb *sandbox) (changed bool, err error) {
	sb.op.Lock()
	defer sb.op.Unlock()
	if st, end := sb.current(); st == Running {
		return false, nil
	} else if st != Paused {
		return false, notRunning(sb.rec.ID, st, end)
	}
	if err := sb.transition(Resuming); err != nil {
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	start := time.Now()
	if sb.isHibernated() {
		err = hibernation{m: m}.wake(ctx, sb)
	} else {
		err = m.unfreeze(ctx, sb)
	}
	if err != nil {
		m.log.Error("resuming sandbox", "sandbox", sb.rec.ID, "err", err)
		<-m.stopAsync(sb, endResumeFailed(err))
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	if err := sb.endPause(); err != nil {
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	m.log.Info("sandbox resumed", "sandbox", sb.rec.ID, "ms", time.Since(start).Milliseconds())
	m.emitFor(sb, api.EventSandboxResumed, nil)
	m.reaper.Wake()
	return true, nil
}

// SetTimeout moves a sandbox's absolute lifetime: it ends timeout_secs
// from now (sandbox::set_timeout).
func (m *Manager) SetTimeout(ctx context.Context, req api.SetTimeoutRequest) (api.SetTimeoutResponse, error) {
	if err := spec.CheckLifetime(req.TimeoutSecs, false); err != nil {
		return api.SetTimeoutResponse{}, err
	}
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.SetTimeoutResponse{}, err
	}
	at, err := sb.setLifetime(req.TimeoutSecs)
	if err != nil {
		return api.SetTimeoutResponse{}, err
	}
	rec := sb.snapshotRecord()
	if err := m.store.put(&rec); err != nil {
		m.log.Error("recording a sandbox's lifetime", "sandbox", sb.rec.ID, "err", err)
	}
	m.reaper.Wake()
	return api.SetTimeoutResponse{SandboxID: sb.rec.ID, ExpiresAt: at.Format(time.RFC3339)}, nil
}

// pausedDuring reports whether a call to sb's agent that failed with err
// failed because sb was paused under it: sb is paused (or pausing) now,
// which may end its agent session, or the call's deadline passed while
// sb was frozen. Such a call is not the agent's failure.
func (sb *sandbox) pausedDuring(err error) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.state.quiesced() {
		return true
	}
	var na *agentclient.NoAnswerError
	// The call began about na.After ago (a second of slack for the rest).
	return errors.As(err, &na) && !sb.lastPause.IsZero() && time.Since(sb.lastPause) <= na.After+time.Second
}

// unsupported is S302: the runtime named cannot do what.
func unsupported(runtimeName, what string) error {
	return errdefs.New(errdefs.CodeUnsupported, "the %s runtime cannot %s", runtimeName, what)
}

// unfreeze thaws a frozen sb's instance.
func (m *Manager) unfreeze(ctx context.Context, sb *sandbox) error {
	p, err := m.pauser(sb)
	if err != nil {
		return err
	}
	if err := p.Resume(ctx); err != nil {
		return err
	}
	select {
	case <-instDone(sb):
		return errors.New("its runtime ended while it was paused")
	default:
		return nil
	}
}

// instEnded reports whether inst has ended.
func instEnded(inst runtime.Instance) bool {
	select {
	case <-inst.Done():
		return true
	default:
		return false
	}
}
