// Package procsvc is the processes service: background processes that
// outlive their caller (sandbox::process::*), their logs
// (sandbox::process::logs) and the streamed exec. The agent's process
// table holds the processes (pid, state, output rings); the service's
// book (procbook.go) adds what hutch alone knows: tags, and which pids it
// started, against the daemon's limits. It reaches a sandbox only through
// the core's Sandboxes (and BeginExec for the streamed exec).
package procsvc

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Core is the core as the service sees it: its sandboxes, and the start
// of an exec it streams (sandbox.Manager.BeginExec).
type Core interface {
	sandbox.Sandboxes
	BeginExec(ctx context.Context, req api.ExecRequest) (sandbox.BegunExec, error)
}

// Limits are the daemon's settings the service applies.
type Limits struct {
	// MaxProcesses and MaxPtys bound the live background processes and
	// terminals of a sandbox (max_processes_per_sandbox,
	// max_ptys_per_sandbox).
	MaxProcesses, MaxPtys int
	// RingBytes is the output each process keeps (process_output_bytes).
	RingBytes int64
	// MaxWaitMs bounds a wait (max_exec_timeout_ms).
	MaxWaitMs uint64
}

// LimitsOf is the daemon's limits for processes, from its config.
func LimitsOf(cfg config.Config) Limits {
	return Limits{MaxProcesses: cfg.MaxProcessesPerSandbox, MaxPtys: cfg.MaxPtysPerSandbox,
		RingBytes: cfg.ProcessOutputBytes, MaxWaitMs: cfg.MaxExecTimeoutMs}
}

// Service answers sandbox::process::*, its logs and the streamed exec
// (functions.Processes and functions.ProcessLogs).
type Service struct {
	sbs Core
	lim Limits

	mu sync.Mutex
	// books are the sandboxes' books by id (book).
	books map[string]*procBook
}

// New is the processes service over core.
func New(core Core, lim Limits) *Service { return &Service{sbs: core, lim: lim} }

// book is sb's book, made at its first use and forgotten once the
// sandbox's teardown is over.
func (s *Service) book(sb sandbox.Handle) *procBook {
	id, ended := sb.ID(), sb.Ended()
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.books[id]; b != nil && b.ended == ended {
		return b
	}
	b := &procBook{ended: ended}
	if s.books == nil {
		s.books = make(map[string]*procBook)
	}
	s.books[id] = b
	go func() {
		<-ended
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.books[id] == b {
			delete(s.books, id)
		}
	}()
	return b
}

// emitFunc sends one event of a process stream: api.EventStart,
// EventStdout, EventStderr or EventExit with its data.
type emitFunc = func(event string, data any) error

// StartProcess starts a background process and answers its pid at once.
func (s *Service) StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error) {
	st, err := s.start(ctx, req)
	if err != nil {
		return api.ProcessStartResponse{}, err
	}
	defer st.release()
	defer st.events.Close() // detached: the process lives on
	go watchProcess(st.sb, st.book, st.pid)
	return api.ProcessStartResponse{Pid: st.pid}, nil
}

// StartStream starts a background process and streams it on the agent
// stream that started it (start, stdout, stderr, then exit with its
// ProcessInfo): sandbox::process::start followed by
// sandbox::process::output with follow, in one agent call. The process
// outlives the stream.
func (s *Service) StartStream(ctx context.Context, req api.ProcessStartRequest, emit emitFunc) (api.ProcessInfo, error) {
	st, err := s.start(ctx, req)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer st.release()
	defer st.events.Close() // detached: the process lives on
	var exited *agentv1.Exited
	if err = emit(api.EventStart, api.ProcessStartResponse{Pid: st.pid}); err == nil {
		exited, err = relay(st.events, emit, st.sb.Touch)
	}
	if err != nil {
		// The stream ends before the process: it is waited for apart.
		go watchProcess(st.sb, st.book, st.pid)
		return api.ProcessInfo{}, Fail(ctx, st.sb, "following output", st.pid, err)
	}
	processExited(st.sb, st.book, st.pid, exited)
	info := st.book.describe(&agentv1.ProcessInfo{Pid: int32(st.pid), Argv: st.argv, StartUnixNs: st.started.GetStartUnixNs(),
		Pty: req.Pty != nil, Exited: exited, StdoutEnd: exited.GetStdoutEnd(), StderrEnd: exited.GetStderrEnd()})
	return info, emit(api.EventExit, info)
}

// started is a background process just started, on the agent stream
// that started it.
type started struct {
	sb      sandbox.Handle
	release func()
	book    *procBook
	events  *agentclient.Events
	pid     int
	argv    []string
	started *agentv1.Started
}

// start starts the background process req asks for and reads its start;
// the caller closes the stream and releases the sandbox.
func (s *Service) start(ctx context.Context, req api.ProcessStartRequest) (*started, error) {
	argv, err := spec.CommandArgv(req.Cmd, req.Args, req.Argv)
	if err != nil {
		return nil, err
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return nil, err
	}
	if err := spec.ValidateWorkdir(req.Workdir); err != nil {
		return nil, err
	}
	if req.Pty != nil && (req.Pty.Cols == 0 || req.Pty.Rows == 0) {
		return nil, errdefs.Malformed("pty needs cols and rows above 0, got %dx%d", req.Pty.Cols, req.Pty.Rows)
	}
	if len(req.Tag) > maxTagBytes {
		return nil, errdefs.Malformed("tag is %d bytes, more than %d", len(req.Tag), maxTagBytes)
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return nil, err
	}
	st, err := s.startIn(ctx, sb, argv, req)
	if err != nil {
		release()
		return nil, err
	}
	st.release = release
	return st, nil
}

// startIn starts argv as req asks in sb, held by the caller.
func (s *Service) startIn(ctx context.Context, sb sandbox.Handle, argv []string, req api.ProcessStartRequest) (*started, error) {
	areq, err := sb.ExecRequest(sandbox.ExecCall{Argv: argv, Env: req.Env, Workdir: req.Workdir, TimeoutMs: req.TimeoutMs, User: req.User})
	if err != nil {
		return nil, err
	}
	sreq := &agentv1.StartRequest{Exec: areq, OpenStdin: req.Stdin, RingBytes: s.lim.RingBytes}
	if req.Pty != nil {
		sreq.Pty = &agentv1.PtySize{Cols: uint32(req.Pty.Cols), Rows: uint32(req.Pty.Rows)}
	}

	b := s.book(sb)
	ok, unreserve := b.reserve(req.Pty != nil, s.lim.MaxProcesses, s.lim.MaxPtys)
	if !ok {
		return nil, errdefs.New(errdefs.CodeProcessLimit,
			"sandbox %s runs %d background processes (max_processes_per_sandbox) or %d terminals (max_ptys_per_sandbox) already",
			sb.ID(), s.lim.MaxProcesses, s.lim.MaxPtys).
			WithFix(nil, "wait for a process to end, or kill one")
	}
	events, err := sb.Agent().Start(ctx, sreq)
	if err != nil {
		unreserve()
		return nil, Fail(ctx, sb, "starting a process", 0, err)
	}
	ev, err := events.Recv()
	if err != nil {
		events.Close()
		unreserve()
		return nil, Fail(ctx, sb, "starting a process", 0, err)
	}
	if ev.GetStarted() == nil {
		// A command that cannot be run: its reason is on stderr.
		events.Close()
		unreserve()
		e := errdefs.New(errdefs.CodeMalformed, "cannot start %s: %s", argv[0], strings.TrimSpace(string(ev.GetOutput().GetData())))
		e.Err = ErrCannotStart
		return nil, e
	}
	pid := int(ev.GetStarted().GetPid())
	b.add(procEntry{pid: pid, tag: req.Tag, pty: req.Pty != nil}, unreserve)
	sb.Emit(api.EventProcessStarted, map[string]any{"pid": pid, "command": argv[0], "tag": req.Tag, "pty": req.Pty != nil})
	return &started{sb: sb, book: b, events: events, pid: pid, argv: argv, started: ev.GetStarted()}, nil
}

// maxTagBytes bounds a process's tag.
const maxTagBytes = 256

// watchProcess waits for background process pid of sb to exit, then frees
// its place in the book's limits. Like a stream, it outlives the call that
// held sb.
func watchProcess(sb sandbox.Handle, b *procBook, pid int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sb.Ended():
			cancel()
		case <-ctx.Done():
		}
	}()
	exited, err := sb.Agent().Wait(ctx, int32(pid))
	if err != nil {
		b.exited(pid)
		return
	}
	processExited(sb, b, pid, exited)
}

// processExited frees background process pid's place in the book and
// tells sb's subscribers how it ended.
func processExited(sb sandbox.Handle, b *procBook, pid int, exited *agentv1.Exited) {
	b.exited(pid)
	sb.Emit(api.EventProcessExited, map[string]any{"pid": pid, "exit_code": exited.GetExitCode(), "signal": exited.GetSignal(),
		"oom_killed": exited.GetOomKilled(), "duration_ms": exited.GetDurationUs() / 1000})
}

// GetProcess describes a process hutch started.
func (s *Service) GetProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessInfo, error) {
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	return s.processInfo(ctx, sb, req.Pid)
}

// processInfo is the agent's description of process pid with its tag.
func (s *Service) processInfo(ctx context.Context, sb sandbox.Handle, pid int) (api.ProcessInfo, error) {
	ps, err := sb.Agent().List(ctx)
	if err != nil {
		return api.ProcessInfo{}, Fail(ctx, sb, "listing processes", pid, err)
	}
	for _, p := range ps {
		if int(p.GetPid()) == pid {
			return s.book(sb).describe(p), nil
		}
	}
	return api.ProcessInfo{}, UnknownProcess(sb.ID(), pid)
}

// ListProcesses lists every process of the sandbox as the sandbox sees
// it, marking those hutch started.
func (s *Service) ListProcesses(ctx context.Context, req api.ProcessListRequest) (api.ProcessListResponse, error) {
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessListResponse{}, err
	}
	defer release()
	c := sb.Agent()
	// The two questions to the agent at once.
	var mine []*agentv1.ProcessInfo
	var listErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		mine, listErr = c.List(ctx)
	}()
	ps, err := c.Ps(ctx)
	<-listed
	if err = cmp.Or(err, listErr); err != nil {
		return api.ProcessListResponse{}, Fail(ctx, sb, "listing processes", 0, err)
	}
	started := make(map[int]bool, len(mine))
	for _, p := range mine {
		started[int(p.GetPid())] = p.GetExited() == nil
	}
	b := s.book(sb)
	out := api.ProcessListResponse{Processes: make([]api.ProcessEntry, 0, len(ps))}
	for _, p := range ps {
		pid := int(p.GetPid())
		e := api.ProcessEntry{
			Pid:        pid,
			Ppid:       int(p.GetPpid()),
			User:       p.GetUser(),
			Command:    p.GetCommand(),
			State:      p.GetState(),
			CPUPercent: p.GetCpuPercent(),
			RSSBytes:   p.GetRssBytes(),
			Hutch:      started[pid],
		}
		if e.User == "" {
			e.User = strconv.FormatUint(uint64(p.GetUid()), 10)
		}
		if e.Hutch {
			e.Tag = b.tag(pid)
		}
		out.Processes = append(out.Processes, e)
	}
	slices.SortFunc(out.Processes, func(a, b api.ProcessEntry) int { return a.Pid - b.Pid })
	return out, nil
}

// ProcessOutput answers what a process's streams hold from the offsets
// asked for, up to one chunk of each.
func (s *Service) ProcessOutput(ctx context.Context, req api.ProcessOutputRequest) (api.ProcessOutputResponse, error) {
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessOutputResponse{}, err
	}
	defer release()
	info, err := s.processInfo(ctx, sb, req.Pid)
	if err != nil {
		return api.ProcessOutputResponse{}, err
	}
	out := api.ProcessOutputResponse{
		Stdout: api.OutputChunk{Offset: min(req.StdoutOffset, info.StdoutBytes)},
		Stderr: api.OutputChunk{Offset: min(req.StderrOffset, info.StderrBytes)},
	}
	if out.Stdout.Offset < info.StdoutBytes || out.Stderr.Offset < info.StderrBytes {
		// Attach from the offsets and take what is there now: each chunk
		// read, until both streams reach the ends the listing saw.
		events, err := sb.Agent().Attach(ctx, &agentv1.AttachRequest{Pid: int32(req.Pid), StdoutOffset: out.Stdout.Offset, StderrOffset: out.Stderr.Offset})
		if err != nil {
			return api.ProcessOutputResponse{}, Fail(ctx, sb, "reading output", req.Pid, err)
		}
		defer events.Close()
		var bufs [2][]byte
		ends := [2]int64{info.StdoutBytes, info.StderrBytes}
		chunks := [2]*api.OutputChunk{&out.Stdout, &out.Stderr}
		for next := [2]int64{out.Stdout.Offset, out.Stderr.Offset}; next[0] < ends[0] || next[1] < ends[1]; {
			ev, err := events.Recv()
			if err != nil {
				return api.ProcessOutputResponse{}, Fail(ctx, sb, "reading output", req.Pid, err)
			}
			o := ev.GetOutput()
			if o == nil {
				if ev.GetExited() != nil {
					break
				}
				continue
			}
			s := StreamIndex(o.GetStream())
			if len(bufs[s]) == 0 {
				chunks[s].Offset, chunks[s].Dropped = o.GetOffset(), o.GetDropped()
			}
			bufs[s] = append(bufs[s], o.GetData()...)
			next[s] = o.GetOffset() + int64(len(o.GetData()))
			if len(bufs[0])+len(bufs[1]) >= maxOutputAnswer {
				break
			}
		}
		for s, c := range chunks {
			c.Data, c.Base64 = TextOrBase64(bufs[s])
		}
	}
	if out.Process, err = s.processInfo(ctx, sb, req.Pid); err != nil {
		return api.ProcessOutputResponse{}, err
	}
	return out, nil
}

// maxOutputAnswer bounds the output one sandbox::process::output answer
// carries; the caller asks again from where it ended.
const maxOutputAnswer = 4 << 20

// FollowProcess streams a process's output from the offsets asked for
// until it exits, and answers its end.
func (s *Service) FollowProcess(ctx context.Context, req api.ProcessOutputRequest, emit emitFunc) (api.ProcessInfo, error) {
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	events, err := sb.Agent().Attach(ctx, &agentv1.AttachRequest{Pid: int32(req.Pid), StdoutOffset: req.StdoutOffset, StderrOffset: req.StderrOffset})
	if err != nil {
		return api.ProcessInfo{}, Fail(ctx, sb, "following output", req.Pid, err)
	}
	defer events.Close()
	if _, err := relay(events, emit, sb.Touch); err != nil {
		return api.ProcessInfo{}, Fail(ctx, sb, "following output", req.Pid, err)
	}
	info, err := s.processInfo(ctx, sb, req.Pid)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	return info, emit(api.EventExit, info)
}

// relay emits a process stream's start and output events until its exit,
// which it returns; activity is called for each event (output is
// activity).
func relay(events *agentclient.Events, emit emitFunc, activity func()) (*agentv1.Exited, error) {
	for {
		ev, err := events.Recv()
		if err != nil {
			return nil, err
		}
		activity()
		switch {
		case ev.GetStarted() != nil:
			err = emit(api.EventStart, api.ProcessStartResponse{Pid: int(ev.GetStarted().GetPid())})
		case ev.GetOutput() != nil:
			o := ev.GetOutput()
			c := api.OutputChunk{Offset: o.GetOffset(), Dropped: o.GetDropped()}
			c.Data, c.Base64 = ownedTextOrBase64(o.GetData())
			name := api.EventStdout
			if StreamIndex(o.GetStream()) == 1 {
				name = api.EventStderr
			}
			err = emit(name, c)
		case ev.GetExited() != nil:
			return ev.GetExited(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ExecStream runs one command and streams its output as it is written:
// start, stdout and stderr events, then exit with the result (without
// output, which is not capped).
func (s *Service) ExecStream(ctx context.Context, req api.ExecRequest, emit emitFunc) (result api.ExecResponse, err error) {
	x, err := s.sbs.BeginExec(ctx, req)
	if err != nil {
		return api.ExecResponse{}, err
	}
	defer func() { x.Finish(result, err) }()
	ctx, sb, areq := x.Ctx, x.Sandbox, x.Request
	start := time.Now()
	events, err := sb.Agent().Start(ctx, &agentv1.StartRequest{Exec: areq, Tied: true, Lossless: true, RingBytes: s.lim.RingBytes})
	if err != nil {
		return api.ExecResponse{}, Fail(ctx, sb, "the exec", 0, err)
	}
	defer events.Close()
	exited, err := relay(events, emit, sb.Touch)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return api.ExecResponse{}, err
		}
		return api.ExecResponse{}, Fail(ctx, sb, "the exec", 0, err)
	}
	out := api.ExecResponse{TimedOut: exited.GetTimedOut(), OOMKilled: exited.GetOomKilled(), DurationMs: uint64(time.Since(start).Milliseconds()), TimeoutMs: uint64(areq.TimeoutMs)}
	if !exited.GetTimedOut() {
		code := int(exited.GetExitCode())
		out.ExitCode, out.Success = &code, code == 0
	}
	return out, emit(api.EventExit, out)
}

// WriteStdin writes to a process's open stdin, and closes it when asked.
func (s *Service) WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error) {
	data := []byte(req.Data)
	if req.Base64 {
		var err error
		if data, err = base64.StdEncoding.DecodeString(req.Data); err != nil {
			return api.ProcessStdinResponse{}, errdefs.Malformed("data is not valid base64: %v", err)
		}
	}
	if len(data) > maxStdinWrite {
		return api.ProcessStdinResponse{}, errdefs.Malformed("data is %d bytes, more than %d in one write", len(data), maxStdinWrite)
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessStdinResponse{}, err
	}
	defer release()
	c := sb.Agent()
	if len(data) > 0 {
		if err := c.WriteStdin(ctx, int32(req.Pid), data); err != nil {
			return api.ProcessStdinResponse{}, Fail(ctx, sb, "writing stdin", req.Pid, err)
		}
	}
	if req.Close {
		if err := c.CloseStdin(ctx, int32(req.Pid)); err != nil {
			return api.ProcessStdinResponse{}, Fail(ctx, sb, "closing stdin", req.Pid, err)
		}
	}
	return api.ProcessStdinResponse{Written: len(data)}, nil
}

// maxStdinWrite bounds one stdin write.
const maxStdinWrite = 4 << 20

// SignalProcess sends a signal (TERM by default) to a process's group.
func (s *Service) SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error) {
	sig, name, err := parseSignal(req.Signal)
	if err != nil {
		return api.ProcessSignalResponse{}, err
	}
	return s.signal(ctx, req.SandboxID, req.Pid, sig, name)
}

// KillProcess kills a process's group (SIGKILL).
func (s *Service) KillProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessSignalResponse, error) {
	return s.signal(ctx, req.SandboxID, req.Pid, syscall.SIGKILL, "KILL")
}

func (s *Service) signal(ctx context.Context, id string, pid int, sig syscall.Signal, name string) (api.ProcessSignalResponse, error) {
	sb, release, err := s.sbs.Acquire(ctx, id, sandbox.UseCall)
	if err != nil {
		return api.ProcessSignalResponse{}, err
	}
	defer release()
	if err := sb.Agent().Signal(ctx, int32(pid), sig); err != nil {
		return api.ProcessSignalResponse{}, Fail(ctx, sb, "signalling", pid, err)
	}
	return api.ProcessSignalResponse{Pid: pid, Signal: name}, nil
}

// parseSignal reads a signal given by name ("TERM", "SIGTERM") or number;
// "" is TERM.
func parseSignal(s string) (syscall.Signal, string, error) {
	if s == "" {
		return syscall.SIGTERM, "TERM", nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, "", errdefs.Malformed("signal %d is not a signal (1 to 64)", n)
		}
		return syscall.Signal(n), SignalName(int32(n)), nil
	}
	name := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "SIG"))
	if sig := unix.SignalNum("SIG" + name); sig != 0 {
		return sig, name, nil
	}
	return 0, "", errdefs.Malformed("unknown signal %q (give a name such as TERM or a number)", s)
}

// WaitProcess waits until a process exits or the request's timeout ends,
// and answers its state.
func (s *Service) WaitProcess(ctx context.Context, req api.ProcessWaitRequest) (api.ProcessInfo, error) {
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	wait := s.lim.MaxWaitMs
	if req.TimeoutMs > 0 {
		wait = min(req.TimeoutMs, wait)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Millisecond)
	defer cancel()
	if _, err := sb.Agent().Wait(wctx, int32(req.Pid)); err != nil && !waitTimedOut(wctx, err) {
		return api.ProcessInfo{}, Fail(ctx, sb, "waiting", req.Pid, err)
	}
	return s.processInfo(ctx, sb, req.Pid)
}

// waitTimedOut says err ended a wait at the wait's own deadline: the
// context's timer, or the agent's side of the same deadline, which gRPC
// carries to it and which may answer DeadlineExceeded before the timer
// here fires. Neither is the agent failing; a call it never answers is
// (agentclient.NoAnswerError).
func waitTimedOut(wctx context.Context, err error) bool {
	var noAnswer *agentclient.NoAnswerError
	return wctx.Err() != nil || (status.Code(err) == codes.DeadlineExceeded && !errors.As(err, &noAnswer))
}

// ResizeProcess sets the size of a process's terminal.
func (s *Service) ResizeProcess(ctx context.Context, req api.ProcessResizeRequest) (api.ProcessResizeResponse, error) {
	if req.Cols == 0 || req.Rows == 0 {
		return api.ProcessResizeResponse{}, errdefs.Malformed("a terminal needs cols and rows above 0, got %dx%d", req.Cols, req.Rows)
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ProcessResizeResponse{}, err
	}
	defer release()
	if err := sb.Agent().Resize(ctx, int32(req.Pid), uint32(req.Rows), uint32(req.Cols)); err != nil {
		return api.ProcessResizeResponse{}, Fail(ctx, sb, "resizing", req.Pid, err)
	}
	return api.ProcessResizeResponse{Pid: req.Pid}, nil
}
