package agent

import (
	"context"
	"io"
	"sync"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Link is the agent's stream to the host across relinks (agentv1's
// RelinkSignal): each session reads and writes through a view of it, and
// Relink ends the current view, so that a sandbox restored from a
// checkpoint can serve a new host session on its new pipes. One goroutine
// reads the stream, into the buffer of the view that asked; bytes it read
// for a view that was cut meanwhile are kept for the next view, so that no
// byte of a new session is lost to the old one.
type Link struct {
	in  io.Reader
	out io.Writer
	// reads carries the views' reads to the pump.
	reads chan linkRead

	// wmu orders writes: a relink takes it, so that the marker follows
	// every byte the old session wrote.
	wmu sync.Mutex
	// mu guards the fields below.
	mu       sync.Mutex
	cur      *linkView
	leftover []byte
	// broken is set once the stream failed (EOF: the host's end is gone
	// for good); guarded by mu.
	broken bool
}

// linkRead is one read of a view: into p, answered on res (the view's,
// buffered, so that the pump never waits for a view that stopped waiting).
type linkRead struct {
	v   *linkView
	p   []byte
	res chan linkResult
}

type linkResult struct {
	n   int
	err error
}

// NewLink starts reading in for the views of the link; writes go to out.
func NewLink(in io.Reader, out io.Writer) *Link {
	l := &Link{in: in, out: out, reads: make(chan linkRead)}
	go l.pump()
	return l
}

// pump serves the views' reads one at a time: from the leftover of a cut
// view first, then from the stream. Once the stream fails, every later
// read fails the same way.
func (l *Link) pump() {
	var streamErr error
	for r := range l.reads {
		l.mu.Lock()
		if len(l.leftover) > 0 {
			n := copy(r.p, l.leftover)
			l.leftover = l.leftover[n:]
			l.mu.Unlock()
			r.res <- linkResult{n: n}
			continue
		}
		l.mu.Unlock()
		if streamErr != nil {
			r.res <- linkResult{err: streamErr}
			continue
		}
		n, err := l.in.Read(r.p)
		l.mu.Lock()
		if r.v.isCut() {
			l.leftover = append(l.leftover, r.p[:n]...)
			n = 0
		}
		l.broken = err != nil
		l.mu.Unlock()
		streamErr = err
		r.res <- linkResult{n: n, err: err}
	}
}

// session returns a new view for the next session, the link's current
// one, and a context that a relink cancels.
func (l *Link) session(ctx context.Context) (*linkView, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	v := &linkView{l: l, cut: make(chan struct{}), res: make(chan linkResult, 1), cancel: cancel}
	l.mu.Lock()
	l.cur = v
	l.mu.Unlock()
	return v, ctx, cancel
}

// Relink ends the current session's view: it reads and writes nothing
// more, RelinkMarker is written after everything it wrote, and its
// session is cancelled. The next session reads what the host sends next.
func (l *Link) Relink() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	v := l.cur
	l.cur = nil
	l.mu.Unlock()
	if v != nil {
		v.cutOnce.Do(func() { close(v.cut) })
		defer v.cancel()
	}
	_, err := l.out.Write(agentv1.RelinkMarker)
	return err
}

// linkView is one session's stream over the link.
type linkView struct {
	l       *Link
	cut     chan struct{}
	cutOnce sync.Once
	// res answers the view's reads, which come one at a time (a session
	// has one reader); until the cut, each result is taken before the
	// next read is asked for.
	res    chan linkResult
	cancel context.CancelFunc
}

func (v *linkView) isCut() bool {
	select {
	case <-v.cut:
		return true
	default:
		return false
	}
}

// Read reads the stream; EOF once the view is cut.
func (v *linkView) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if v.isCut() { // a cut view asks for nothing more: its res may hold a stale answer
		return 0, io.EOF
	}
	select {
	case v.l.reads <- linkRead{v: v, p: p, res: v.res}:
	case <-v.cut:
		return 0, io.EOF
	}
	select {
	case res := <-v.res:
		if res.n == 0 && v.isCut() {
			return 0, io.EOF
		}
		return res.n, res.err
	case <-v.cut:
		return 0, io.EOF // the pump keeps what it reads for the next view
	}
}

// Write writes to the stream unless the view is cut.
func (v *linkView) Write(p []byte) (int, error) {
	v.l.wmu.Lock()
	defer v.l.wmu.Unlock()
	if v.isCut() {
		return 0, io.ErrClosedPipe
	}
	return v.l.out.Write(p)
}

// Close ends the view's session, not the stream: the agent exits once the
// stream ends.
func (v *linkView) Close() error { return nil }

// ServeLink serves sessions over l until the host's stream ends or ctx is
// cancelled: a relink ends one session and starts the next. With the
// Server's Reattach, a session that ends while the stream itself still
// works (its host went away: a daemon that died, the stream's pipes held
// open by the sandbox) does not end the agent: it waits for the next
// relink, a later daemon's (issue 35).
func (s *Server) ServeLink(ctx context.Context, l *Link) error {
	for {
		v, sctx, cancel := l.session(ctx)
		err := s.Serve(sctx, v)
		cancel()
		if ctx.Err() != nil {
			return err
		}
		if !v.isCut() {
			if !s.reattach || l.isBroken() {
				return err
			}
			s.log.Info("the host's session ended: waiting for a relink", "err", err)
			select {
			case <-v.cut:
			case <-ctx.Done():
				return nil
			}
		}
		s.log.Info("relinked: serving a new session")
	}
}

// isBroken reports whether the stream has failed for good.
func (l *Link) isBroken() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}
