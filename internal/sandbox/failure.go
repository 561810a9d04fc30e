package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// endGrace is how long a failed call waits for its sandbox's end to be
// known (a runtime reports an out-of-memory kill a moment after the agent
// stream breaks), so that it can say why.
const endGrace = 2 * time.Second

// Fail is the one failure policy (Handle.Fail) of a call to the sandbox's
// agent for op ("the exec", "fs::ls") that failed with err, once the
// caller has mapped the agent's well-formed answers (an FsError, a refused
// spawn): the caller went away (its context's error), or the sandbox ended
// under the call (S004 with its end), or it was paused under the call,
// whose deadline passed meanwhile (S005), or else the agent broke a
// deadline, a size limit or the protocol. Then the sandbox cannot be
// trusted and is ended (S004).
func (h handle) Fail(ctx context.Context, op string, err error) error {
	m, sb := h.m, h.sb
	if ctx.Err() != nil {
		return ctx.Err()
	}
	inst, ac := sb.conn()
	select {
	case <-instDone(sb): // as the watcher: not the end of a paused one
		m.stop(sb, endOf(inst, ac), &death{inst, ac})
	case <-sb.destroyed:
	case <-time.After(endGrace):
	}
	if st, end := sb.current(); st.ended() {
		return errdefs.New(errdefs.CodeStopped, "sandbox %s stopped during %s: %s", sb.rec.ID, op, stopText(end))
	}
	if sb.pausedDuring(err) {
		return errdefs.New(errdefs.CodePaused, "sandbox %s was paused during %s, which ran out of time", sb.rec.ID, op).
			WithFix(nil, "call again once it is resumed")
	}
	end := agentEnd(err)
	if errors.Is(err, agentclient.ErrClosed) {
		end = endOf(inst, ac)
	}
	m.stopAsync(sb, end)
	_, end = sb.current()
	return errdefs.New(errdefs.CodeStopped, "sandbox %s was stopped: %s", sb.rec.ID, stopText(end))
}

// instDone is the Done channel of sb's instance; nil (never ready) when
// it has none.
func instDone(sb *sandbox) <-chan struct{} {
	inst, _ := sb.conn()
	if inst == nil {
		return nil
	}
	return inst.Done()
}
