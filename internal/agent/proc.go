package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Indexes of a process's output streams; a PTY's output is stdout.
const (
	stdout = 0
	stderr = 1
)

// streamOf is the wire name of output stream s.
var streamOf = [2]agentv1.Stream{agentv1.Stream_STREAM_STDOUT, agentv1.Stream_STREAM_STDERR}

// proc is one process of the table: it lives until it exits or is killed,
// whoever is streaming its events. Its output goes into one ring buffer per
// stream; readers follow the rings (follow.go).
type proc struct {
	pid     int
	argv    []string
	started time.Time
	spawn   time.Duration
	tied    bool
	// cg is the process's own cgroup, nil outside a microVM.
	cg *procCgroup

	// in is our end of the process's stdin (a pipe or the PTY), nil when
	// it reads /dev/null; pty is the PTY's master, nil without.
	in  *os.File
	pty *os.File
	// inMu serializes writes to in and its closing; inOpen is guarded by it.
	inMu   sync.Mutex
	inOpen bool
	// keepIn keeps in open after the start's stdin bytes.
	keepIn bool

	// mu guards the fields below; cond (on mu) wakes output writers held
	// back by a capture reader (follow.go).
	mu   sync.Mutex
	cond *sync.Cond
	out  [2]ring
	pins map[*reader]struct{}
	// changed is closed and replaced whenever output or the exit arrives.
	changed chan struct{}
	// exited is nil while the process runs; done is closed when it is set,
	// after the last output.
	exited *agentv1.Exited
	done   chan struct{}
}

// spawn starts the process req describes, found at path, in dir, with its
// own process group (or session, on a PTY), and starts the goroutines that
// feed and drain it and wait for it. onExit runs once it has exited.
func spawn(path, dir string, req *agentv1.StartRequest, onExit func(*proc)) (*proc, error) {
	ereq := req.GetExec()
	var s *childIO
	var err error
	if req.GetPty() != nil {
		s, err = ptyStdio(req.GetPty())
	} else {
		s, err = pipes(len(ereq.GetStdin()) > 0 || req.GetOpenStdin())
	}
	if err != nil {
		return nil, err
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Credential: credential(ereq)}
	if s.pty != nil {
		sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Credential: credential(ereq)}
	}
	cg, err := newProcCgroup()
	if err != nil {
		s.closeChild()
		s.closeOurs()
		return nil, err
	}
	if cg != nil {
		sys.UseCgroupFD, sys.CgroupFD = true, cg.fd
	}
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   ereq.GetEnv(),
		Files: []uintptr{uintptr(s.child[0]), uintptr(s.child[1]), uintptr(s.child[2])},
		Sys:   sys,
	}
	size := ringSize(req.GetRingBytes())
	p := &proc{
		argv:    append([]string(nil), ereq.GetArgv()...),
		tied:    req.GetTied(),
		in:      s.in,
		inOpen:  s.in != nil,
		keepIn:  req.GetOpenStdin() || s.pty != nil,
		pty:     s.pty,
		cg:      cg,
		out:     [2]ring{newRing(size), newRing(size)},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.cond = sync.NewCond(&p.mu)
	var status <-chan syscall.WaitStatus
	p.pid, status, err = children.spawn(func() (int, error) {
		p.started = time.Now()
		pid, err := syscall.ForkExec(path, ereq.GetArgv(), attr)
		p.spawn = time.Since(p.started)
		return pid, err
	})
	s.closeChild()
	cg.started()
	if err != nil {
		s.closeOurs()
		cg.end()
		return nil, err
	}

	filled := make(chan struct{}, len(s.out))
	for i, f := range s.out {
		go p.drain(i, f, filled)
	}
	if p.in != nil {
		// Locked here so that no WriteStdin can come before these bytes.
		p.inMu.Lock()
		go p.feed(ereq.GetStdin())
	}
	go p.run(status, time.Duration(ereq.GetTimeoutMs())*time.Millisecond, s.out, filled, onExit)
	return p, nil
}

// drain reads one output file into ring s until its end, closes it and
// tells filled. When the process has exited with the file still open,
// held by processes it left behind, run cuts the reads short (after
// pipeGrace) and waits for filled: the rings then hold all they will.
// After the cut a terminal is closed (hung up, as a terminal's window is),
// and a pipe is read on, what it brings dropped, until they close it: so
// their writes never fail, and cost one small buffer.
func (p *proc) drain(s int, f *os.File, filled chan<- struct{}) {
	cut := p.fill(s, f)
	if !cut || p.pty != nil {
		f.Close()
		filled <- struct{}{}
		return
	}
	filled <- struct{}{}
	discard(f)
	f.Close()
}

// fill reads f into ring s until its end (false) or until run cuts the
// read short (true).
func (p *proc) fill(s int, f *os.File) bool {
	// Small at first, as most processes write little; doubled by each
	// read that fills it up to readChunk, or the ring's size (a lossless
	// write of more could never be made).
	chunk := make([]byte, min(firstReadChunk, p.out[s].size))
	most := min(readChunk, p.out[s].size)
	for {
		n, err := f.Read(chunk)
		if n > 0 {
			p.write(s, chunk[:n])
		}
		if n == len(chunk) && n < most {
			chunk = make([]byte, min(2*n, most))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.fillBuffered(s, f, chunk)
			return true
		}
		if err != nil {
			return false
		}
	}
}

// fillBuffered reads into ring s what f already holds once run cut the
// reads short, never waiting: what the process wrote before it exited is
// kept even when this drain was not scheduled within pipeGrace (a busy
// machine). It reads at most cutReadMax, as a writer left behind may
// keep the pipe full.
func (p *proc) fillBuffered(s int, f *os.File, chunk []byte) {
	_ = f.SetReadDeadline(time.Time{})
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for read := 0; read < cutReadMax; {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), chunk)
			return true // one read, ready or not
		}); err != nil || rerr != nil || n <= 0 {
			return
		}
		p.write(s, chunk[:n])
		read += n
	}
}

// discard reads f to its end and drops what it reads.
func discard(f *os.File) {
	_ = f.SetReadDeadline(time.Time{})
	_, _ = io.Copy(io.Discard, f)
}

// write appends b to ring s, once no capture reader still needs the bytes
// it would push out, and wakes the readers.
func (p *proc) write(s int, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.heldBackLocked(s, len(b)) {
		p.cond.Wait()
	}
	p.out[s].write(b)
	p.notifyLocked()
}

func (p *proc) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// feed writes the start's stdin bytes, with inMu held by spawn, then
// closes stdin unless it stays open. A child that exits without reading
// makes the write fail; that is not an error of the process.
func (p *proc) feed(data []byte) {
	if len(data) > 0 {
		_, _ = p.in.Write(data)
	}
	p.inMu.Unlock()
	if !p.keepIn {
		p.closeStdin()
	}
}

// writeStdin writes data to the process's open stdin; ctx ending cuts the
// write off.
func (p *proc) writeStdin(ctx context.Context, data []byte) error {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if !p.inOpen || !p.keepIn {
		return status.Errorf(codes.FailedPrecondition, "process %d has no open stdin", p.pid)
	}
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = p.in.SetWriteDeadline(time.Now())
		close(cut)
	})
	_, err := p.in.Write(data)
	if !stop() {
		// The next writer must not meet this call's deadline.
		<-cut
		_ = p.in.SetWriteDeadline(time.Time{})
		return status.FromContextError(ctx.Err()).Err()
	}
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "writing to the stdin of process %d: %v", p.pid, errnoText(err))
	}
	return nil
}

// closeStdin closes the process's stdin, once.
func (p *proc) closeStdin() {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if p.inOpen {
		p.in.Close()
		p.inOpen = false
	}
}

// run waits for the process to exit, or kills its process group when the
// timeout fires, lets its output drain, and records its exit. drains gets
// one value from each drain of out once it has filled its ring.
func (p *proc) run(ws <-chan syscall.WaitStatus, timeout time.Duration, out []*os.File, drains <-chan struct{}, onExit func(*proc)) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var st syscall.WaitStatus
	timedOut := false
	select {
	case st = <-ws:
	case <-expired:
		select {
		case st = <-ws: // exited just in time
		default:
			timedOut = true
			children.kill(p.pid)
			st = <-ws
		}
	}
	ended := time.Now()
	oomKilled := p.cg.end()
	settle(out, drains)
	if p.in != nil {
		// A writer blocked on a child that stopped reading gives up.
		_ = p.in.SetWriteDeadline(time.Now())
		p.closeStdin()
	}

	e := &agentv1.Exited{DurationUs: ended.Sub(p.started).Microseconds(), OomKilled: oomKilled}
	switch {
	case timedOut:
		e.TimedOut = true
		e.ExitCode = -1
	case st.Signaled():
		e.Signal = int32(st.Signal())
		e.ExitCode = 128 + e.Signal
	default:
		e.ExitCode = int32(st.ExitStatus())
	}
	p.mu.Lock()
	e.StdoutEnd, e.StderrEnd = p.out[stdout].end, p.out[stderr].end
	p.exited = e
	close(p.done)
	p.notifyLocked()
	p.mu.Unlock()
	onExit(p)
}

// settle gives the drains of out up to pipeGrace to reach the end of
// their files (a child the process left behind may hold its stdout or
// stderr open indefinitely), then cuts their reads short, and returns once
// each has put what it read in its ring.
func settle(out []*os.File, drains <-chan struct{}) {
	left := len(out)
	t := time.NewTimer(pipeGrace)
	defer t.Stop()
wait:
	for left > 0 {
		select {
		case <-drains:
			left--
		case <-t.C:
			break wait
		}
	}
	if left == 0 {
		return
	}
	// Errors only mean the file is already closed: its drain is done.
	for _, f := range out {
		_ = f.SetReadDeadline(time.Now())
	}
	for ; left > 0; left-- {
		<-drains
	}
}

// signal sends sig to the process's group while it has not exited.
func (p *proc) signal(sig syscall.Signal) error {
	if !children.signal(p.pid, sig) {
		return status.Errorf(codes.FailedPrecondition, "process %d has exited", p.pid)
	}
	return nil
}

// kill ends the process's group while it has not exited.
func (p *proc) kill() { children.kill(p.pid) }

// resize sets the size of the process's PTY.
func (p *proc) resize(size *agentv1.PtySize) error {
	if p.pty == nil {
		return status.Errorf(codes.FailedPrecondition, "process %d has no pty", p.pid)
	}
	if size.GetRows() > 0xffff || size.GetCols() > 0xffff {
		return status.Errorf(codes.InvalidArgument, "pty size %dx%d is too large", size.GetRows(), size.GetCols())
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "process %d: %v", p.pid, err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setPtySize(int(fd), size) }); err != nil {
		return status.Errorf(codes.FailedPrecondition, "process %d has exited", p.pid)
	}
	if serr != nil {
		return status.Errorf(codes.Internal, "process %d: %v", p.pid, serr)
	}
	return nil
}

// info describes the process.
func (p *proc) info() *agentv1.ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	pi := &agentv1.ProcessInfo{
		Pid:         int32(p.pid),
		Argv:        p.argv,
		State:       agentv1.ProcessState_PROCESS_STATE_RUNNING,
		StartUnixNs: p.started.UnixNano(),
		Pty:         p.pty != nil,
		Tied:        p.tied,
		OpenStdin:   p.keepIn && p.in != nil,
		Exited:      p.exited,
		StdoutEnd:   p.out[stdout].end,
		StderrEnd:   p.out[stderr].end,
	}
	if p.exited != nil {
		pi.State = agentv1.ProcessState_PROCESS_STATE_EXITED
	}
	return pi
}

// wait returns the process's exit once it has exited, or ctx's error.
func (p *proc) wait(ctx context.Context) (*agentv1.Exited, error) {
	select {
	case <-p.done:
		return p.exited, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}
