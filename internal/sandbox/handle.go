package sandbox

import (
	"context"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Use is what a call does with a live sandbox, which decides what
// acquire checks and counts.
type Use int

const (
	// UseRead reads the sandbox's state: not activity (metrics); a
	// paused sandbox may be read.
	UseRead Use = iota
	// UseCall calls its agent: activity, before and after.
	UseCall
	// UseExec starts a process: activity, and an exec slot of the sandbox
	// (S003) and of its owner (S400) for the call's length.
	UseExec
	// UseRecord changes the sandbox's own record (its env): any state
	// but ended (S004), not activity, no resume.
	UseRecord
	// UseLookup only finds the sandbox (S001, S002), whatever its state:
	// not activity, no resume (what a service keeps about it, listed).
	UseLookup
)

// acquire is the one way to a live sandbox: it finds the sandbox of id
// for ctx's owner (S001, S002), checks that it is running (S004 with its
// end, S005 while paused; a paused sandbox created with auto_resume is
// resumed first; a read may see a paused one), counts the call as
// activity and takes what u needs. The caller
// calls release once the call is over, exactly once.
func (m *Manager) acquire(ctx context.Context, id string, u Use) (sb *sandbox, release func(), err error) {
	sb, err = m.lookup(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if u == UseLookup {
		return sb, func() {}, nil
	}
	st, end := sb.current()
	if u == UseRead && (st == Running || st == Paused) {
		return sb, func() {}, nil
	}
	if u == UseRecord {
		if st.ended() {
			return nil, nil, stoppedError(sb.rec.ID, end)
		}
		return sb, func() {}, nil
	}
	if sb.rec.AutoResume && (st == Paused || st == Pausing || st == Resuming) {
		// Created with auto_resume: thawed for the call (after a pause
		// or resume under way).
		if _, err := m.thaw(sb); err != nil {
			return nil, nil, err
		}
		st, end = sb.current()
	}
	if st != Running {
		return nil, nil, notRunning(sb.rec.ID, st, end)
	}
	sb.touch()
	if u == UseCall {
		return sb, sb.touch, nil
	}
	select {
	case sb.slots <- struct{}{}:
	default:
		return nil, nil, errdefs.New(errdefs.CodeExecBusy, "sandbox %s already has %d execs in flight (max_concurrent_exec_per_sandbox=%d)", sb.rec.ID, cap(sb.slots), cap(sb.slots)).
			WithFix(nil, "wait for an exec to finish, or run long-lived processes detached")
	}
	releaseOwner, err := m.acquireExec(sb.rec.Owner)
	if err != nil {
		<-sb.slots
		return nil, nil, err
	}
	return sb, func() {
		releaseOwner()
		<-sb.slots
		sb.touch()
	}, nil
}

// lookup finds the sandbox of a request's id: S001 malformed, S002 unknown
// (or another owner's), otherwise the sandbox, whatever its state.
func (m *Manager) lookup(ctx context.Context, id string) (*sandbox, error) {
	id, err := spec.ParseID(id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok || sb.rec.Owner != auth.OwnerFrom(ctx) {
		return nil, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", id)
	}
	return sb, nil
}

// notRunning is the error of a call on a sandbox in state st: S004 with
// its end once it has ended, else S004 saying it is not running now.
func notRunning(id string, st State, end runtime.End) error {
	if st.ended() {
		return stoppedError(id, end)
	}
	if st == Pausing || st == Paused || st == Resuming {
		return pausedError(id, st)
	}
	return errdefs.New(errdefs.CodeStopped, "sandbox %s is %s, not running", id, st).
		WithFix(nil, "wait for it to run again")
}

// stoppedError is S004 with the sandbox's end.
func stoppedError(id string, end runtime.End) error {
	return errdefs.New(errdefs.CodeStopped, "sandbox %s is stopped: %s", id, stopText(end)).
		WithFix(nil, "create a new sandbox")
}

// pausedError is S005: sb is paused, or being paused or resumed.
func pausedError(id string, st State) error {
	return errdefs.New(errdefs.CodePaused, "sandbox %s is %s", id, st).
		WithFix(nil, "resume it (sandbox::resume), or create sandboxes with auto_resume: true")
}
