package sandbox

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Processes: background processes that outlive their caller
// (sandbox::process::*) and the streamed exec. The agent's process table
// holds them (pid, state, output rings); the sandbox's book (procbook.go)
// adds what hutch alone knows: tags, and which pids it started.

// emitFunc sends one event of a process stream: api.EventStart,
// EventStdout, EventStderr or EventExit with its data.
type emitFunc = func(event string, data any) error

// StartProcess starts a background process and answers its pid at once.
func (m *Manager) StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error) {
	argv, err := commandArgv(req.Cmd, req.Args, req.Argv)
	if err != nil {
		return api.ProcessStartResponse{}, err
	}
	if err := ValidateEnv("env", req.Env); err != nil {
		return api.ProcessStartResponse{}, err
	}
	if err := validateWorkdir(req.Workdir); err != nil {
		return api.ProcessStartResponse{}, err
	}
	if req.Pty != nil && (req.Pty.Cols == 0 || req.Pty.Rows == 0) {
		return api.ProcessStartResponse{}, errdefs.Malformed("pty needs cols and rows above 0, got %dx%d", req.Pty.Cols, req.Pty.Rows)
	}
	if len(req.Tag) > maxTagBytes {
		return api.ProcessStartResponse{}, errdefs.Malformed("tag is %d bytes, more than %d", len(req.Tag), maxTagBytes)
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessStartResponse{}, err
	}
	defer release()
	areq, err := m.agentExec(sb, argv, req.Env, req.Workdir, nil, req.TimeoutMs, req.User)
	if err != nil {
		return api.ProcessStartResponse{}, err
	}
	areq.MaxOutputBytes = 0
	sreq := &agentv1.StartRequest{Exec: areq, OpenStdin: req.Stdin, RingBytes: m.cfg.ProcessOutputBytes}
	if req.Pty != nil {
		sreq.Pty = &agentv1.PtySize{Cols: uint32(req.Pty.Cols), Rows: uint32(req.Pty.Rows)}
	}

	ok, unreserve := sb.procs.reserve(req.Pty != nil, m.cfg.MaxProcessesPerSandbox, m.cfg.MaxPtysPerSandbox)
	if !ok {
		return api.ProcessStartResponse{}, errdefs.New(errdefs.CodeProcessLimit,
			"sandbox %s runs %d background processes (max_processes_per_sandbox) or %d terminals (max_ptys_per_sandbox) already",
			sb.rec.ID, m.cfg.MaxProcessesPerSandbox, m.cfg.MaxPtysPerSandbox).
			WithFix(nil, "wait for a process to end, or kill one")
	}
	events, err := sb.client().Start(ctx, sreq)
	if err != nil {
		unreserve()
		return api.ProcessStartResponse{}, m.processError(ctx, sb, "starting a process", 0, err)
	}
	defer events.Close() // detached: the process lives on
	ev, err := events.Recv()
	if err != nil {
		unreserve()
		return api.ProcessStartResponse{}, m.processError(ctx, sb, "starting a process", 0, err)
	}
	if ev.GetStarted() == nil {
		// A command that cannot be run: its reason is on stderr.
		unreserve()
		e := errdefs.New(errdefs.CodeMalformed, "cannot start %s: %s", argv[0], strings.TrimSpace(string(ev.GetOutput().GetData())))
		e.Err = errCannotStart
		return api.ProcessStartResponse{}, e
	}
	pid := int(ev.GetStarted().GetPid())
	sb.procs.add(procEntry{pid: pid, tag: req.Tag, pty: req.Pty != nil}, unreserve)
	m.emitFor(sb, api.EventProcessStarted, map[string]any{"pid": pid, "command": argv[0], "tag": req.Tag, "pty": req.Pty != nil})
	go m.watchProcess(sb, pid)
	return api.ProcessStartResponse{Pid: pid}, nil
}

// errCannotStart is the cause of a start the agent refused: the command
// is not found or not executable.
var errCannotStart = errors.New("cannot start the command")

// maxTagBytes bounds a process's tag.
const maxTagBytes = 256

// watchProcess waits for background process pid to exit, then frees its
// place in the sandbox's limits.
func (m *Manager) watchProcess(sb *sandbox, pid int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sb.destroyed:
			cancel()
		case <-ctx.Done():
		}
	}()
	exited, err := sb.client().Wait(ctx, int32(pid))
	sb.procs.exited(pid)
	if err == nil {
		m.emitFor(sb, api.EventProcessExited, map[string]any{"pid": pid, "exit_code": exited.GetExitCode(), "signal": exited.GetSignal(),
			"oom_killed": exited.GetOomKilled(), "duration_ms": exited.GetDurationUs() / 1000})
	}
}

// agentExec is the agent's request for a command of sandbox sb: the
// sandbox's env and workdir under the request's, its user or the one
// named, and the timeout bounded by the daemon's maximum (0: none for a
// background process).
func (m *Manager) agentExec(sb *sandbox, argv []string, env api.Env, workdir string, stdin []byte, timeoutMs uint64, user string) (*agentv1.ExecRequest, error) {
	if workdir == "" {
		workdir = sb.image.Config.WorkingDir
	}
	areq := &agentv1.ExecRequest{
		Argv:      argv,
		Env:       sb.env(),
		Workdir:   workdir,
		Stdin:     stdin,
		TimeoutMs: int64(timeoutMs),
	}
	if len(env) > 0 {
		areq.Env = MergeEnv(areq.Env, env)
	}
	u, err := sb.namedUser(user)
	if err != nil {
		return nil, err
	}
	applyUser(areq, u)
	return areq, nil
}

// GetProcess describes a process hutch started.
func (m *Manager) GetProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessInfo, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	return m.processInfo(ctx, sb, req.Pid)
}

// processInfo is the agent's description of process pid with its tag.
func (m *Manager) processInfo(ctx context.Context, sb *sandbox, pid int) (api.ProcessInfo, error) {
	ps, err := sb.client().List(ctx)
	if err != nil {
		return api.ProcessInfo{}, m.processError(ctx, sb, "listing processes", pid, err)
	}
	for _, p := range ps {
		if int(p.GetPid()) == pid {
			return sb.procs.describe(p), nil
		}
	}
	return api.ProcessInfo{}, unknownProcess(sb.rec.ID, pid)
}

func unknownProcess(id string, pid int) error {
	return errdefs.New(errdefs.CodeProcessNotFound, "sandbox %s has no process %d that hutch started", id, pid).
		WithFix(nil, "sandbox::process::list shows the sandbox's processes")
}

// ListProcesses lists every process of the sandbox as the sandbox sees
// it, marking those hutch started.
func (m *Manager) ListProcesses(ctx context.Context, req api.ProcessListRequest) (api.ProcessListResponse, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessListResponse{}, err
	}
	defer release()
	c := sb.client()
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
		return api.ProcessListResponse{}, m.processError(ctx, sb, "listing processes", 0, err)
	}
	started := make(map[int]bool, len(mine))
	for _, p := range mine {
		started[int(p.GetPid())] = p.GetExited() == nil
	}
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
			e.Tag = sb.procs.tag(pid)
		}
		out.Processes = append(out.Processes, e)
	}
	slices.SortFunc(out.Processes, func(a, b api.ProcessEntry) int { return a.Pid - b.Pid })
	return out, nil
}

// ProcessOutput answers what a process's streams hold from the offsets
// asked for, up to one chunk of each.
func (m *Manager) ProcessOutput(ctx context.Context, req api.ProcessOutputRequest) (api.ProcessOutputResponse, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessOutputResponse{}, err
	}
	defer release()
	info, err := m.processInfo(ctx, sb, req.Pid)
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
		events, err := sb.client().Attach(ctx, &agentv1.AttachRequest{Pid: int32(req.Pid), StdoutOffset: out.Stdout.Offset, StderrOffset: out.Stderr.Offset})
		if err != nil {
			return api.ProcessOutputResponse{}, m.processError(ctx, sb, "reading output", req.Pid, err)
		}
		defer events.Close()
		var bufs [2][]byte
		ends := [2]int64{info.StdoutBytes, info.StderrBytes}
		chunks := [2]*api.OutputChunk{&out.Stdout, &out.Stderr}
		for next := [2]int64{out.Stdout.Offset, out.Stderr.Offset}; next[0] < ends[0] || next[1] < ends[1]; {
			ev, err := events.Recv()
			if err != nil {
				return api.ProcessOutputResponse{}, m.processError(ctx, sb, "reading output", req.Pid, err)
			}
			o := ev.GetOutput()
			if o == nil {
				if ev.GetExited() != nil {
					break
				}
				continue
			}
			s := streamIndex(o.GetStream())
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
			c.Data, c.Base64 = textOrBase64(bufs[s])
		}
	}
	if out.Process, err = m.processInfo(ctx, sb, req.Pid); err != nil {
		return api.ProcessOutputResponse{}, err
	}
	return out, nil
}

// maxOutputAnswer bounds the output one sandbox::process::output answer
// carries; the caller asks again from where it ended.
const maxOutputAnswer = 4 << 20

func streamIndex(s agentv1.Stream) int {
	if s == agentv1.Stream_STREAM_STDERR {
		return 1
	}
	return 0
}

// textOrBase64 is b as text, or in base64 when it is not valid UTF-8.
func textOrBase64(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// FollowProcess streams a process's output from the offsets asked for
// until it exits, and answers its end.
func (m *Manager) FollowProcess(ctx context.Context, req api.ProcessOutputRequest, emit emitFunc) (api.ProcessInfo, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	events, err := sb.client().Attach(ctx, &agentv1.AttachRequest{Pid: int32(req.Pid), StdoutOffset: req.StdoutOffset, StderrOffset: req.StderrOffset})
	if err != nil {
		return api.ProcessInfo{}, m.processError(ctx, sb, "following output", req.Pid, err)
	}
	defer events.Close()
	if _, err := relay(events, emit, sb.touch); err != nil {
		return api.ProcessInfo{}, m.processError(ctx, sb, "following output", req.Pid, err)
	}
	info, err := m.processInfo(ctx, sb, req.Pid)
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
			c.Data, c.Base64 = textOrBase64(o.GetData())
			name := api.EventStdout
			if streamIndex(o.GetStream()) == 1 {
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
func (m *Manager) ExecStream(ctx context.Context, req api.ExecRequest, emit emitFunc) (result api.ExecResponse, err error) {
	ctx, done := m.traceExec(ctx, req)
	defer func() { done(result, err) }()
	sb, release, areq, err := m.prepareExec(ctx, req)
	if err != nil {
		return api.ExecResponse{}, err
	}
	defer release()
	start := time.Now()
	events, err := sb.client().Start(ctx, &agentv1.StartRequest{Exec: areq, Tied: true, Lossless: true, RingBytes: m.cfg.ProcessOutputBytes})
	if err != nil {
		return api.ExecResponse{}, m.processError(ctx, sb, "the exec", 0, err)
	}
	defer events.Close()
	exited, err := relay(events, emit, sb.touch)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return api.ExecResponse{}, err
		}
		return api.ExecResponse{}, m.processError(ctx, sb, "the exec", 0, err)
	}
	out := api.ExecResponse{TimedOut: exited.GetTimedOut(), OOMKilled: exited.GetOomKilled(), DurationMs: uint64(time.Since(start).Milliseconds()), TimeoutMs: uint64(areq.TimeoutMs)}
	if !exited.GetTimedOut() {
		code := int(exited.GetExitCode())
		out.ExitCode, out.Success = &code, code == 0
	}
	return out, emit(api.EventExit, out)
}

// execTimeout is an exec's timeout: the request's or the default, at most
// the maximum.
func (m *Manager) execTimeout(ms uint64) uint64 {
	if ms == 0 {
		ms = m.cfg.DefaultExecTimeoutMs
	}
	return min(ms, m.cfg.MaxExecTimeoutMs)
}

// WriteStdin writes to a process's open stdin, and closes it when asked.
func (m *Manager) WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error) {
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
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessStdinResponse{}, err
	}
	defer release()
	c := sb.client()
	if len(data) > 0 {
		if err := c.WriteStdin(ctx, int32(req.Pid), data); err != nil {
			return api.ProcessStdinResponse{}, m.processError(ctx, sb, "writing stdin", req.Pid, err)
		}
	}
	if req.Close {
		if err := c.CloseStdin(ctx, int32(req.Pid)); err != nil {
			return api.ProcessStdinResponse{}, m.processError(ctx, sb, "closing stdin", req.Pid, err)
		}
	}
	return api.ProcessStdinResponse{Written: len(data)}, nil
}

// maxStdinWrite bounds one stdin write.
const maxStdinWrite = 4 << 20

// SignalProcess sends a signal (TERM by default) to a process's group.
func (m *Manager) SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error) {
	sig, name, err := parseSignal(req.Signal)
	if err != nil {
		return api.ProcessSignalResponse{}, err
	}
	return m.signal(ctx, req.SandboxID, req.Pid, sig, name)
}

// KillProcess kills a process's group (SIGKILL).
func (m *Manager) KillProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessSignalResponse, error) {
	return m.signal(ctx, req.SandboxID, req.Pid, syscall.SIGKILL, "KILL")
}

func (m *Manager) signal(ctx context.Context, id string, pid int, sig syscall.Signal, name string) (api.ProcessSignalResponse, error) {
	sb, release, err := m.acquire(ctx, id, UseCall)
	if err != nil {
		return api.ProcessSignalResponse{}, err
	}
	defer release()
	if err := sb.client().Signal(ctx, int32(pid), sig); err != nil {
		return api.ProcessSignalResponse{}, m.processError(ctx, sb, "signalling", pid, err)
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
		return syscall.Signal(n), signalName(int32(n)), nil
	}
	name := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "SIG"))
	if sig := unix.SignalNum("SIG" + name); sig != 0 {
		return sig, name, nil
	}
	return 0, "", errdefs.Malformed("unknown signal %q (give a name such as TERM or a number)", s)
}

// WaitProcess waits until a process exits or the request's timeout ends,
// and answers its state.
func (m *Manager) WaitProcess(ctx context.Context, req api.ProcessWaitRequest) (api.ProcessInfo, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessInfo{}, err
	}
	defer release()
	wait := m.cfg.MaxExecTimeoutMs
	if req.TimeoutMs > 0 {
		wait = min(req.TimeoutMs, wait)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Millisecond)
	defer cancel()
	if _, err := sb.client().Wait(wctx, int32(req.Pid)); err != nil && wctx.Err() == nil {
		return api.ProcessInfo{}, m.processError(ctx, sb, "waiting", req.Pid, err)
	}
	return m.processInfo(ctx, sb, req.Pid)
}

// ResizeProcess sets the size of a process's terminal.
func (m *Manager) ResizeProcess(ctx context.Context, req api.ProcessResizeRequest) (api.ProcessResizeResponse, error) {
	if req.Cols == 0 || req.Rows == 0 {
		return api.ProcessResizeResponse{}, errdefs.Malformed("a terminal needs cols and rows above 0, got %dx%d", req.Cols, req.Rows)
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ProcessResizeResponse{}, err
	}
	defer release()
	if err := sb.client().Resize(ctx, int32(req.Pid), uint32(req.Rows), uint32(req.Cols)); err != nil {
		return api.ProcessResizeResponse{}, m.processError(ctx, sb, "resizing", req.Pid, err)
	}
	return api.ProcessResizeResponse{Pid: req.Pid}, nil
}

// processError turns an agent's refusal of a process call into its S-code
// (the agent's message is the sandbox's and goes in clipped text); any
// other failure is the agent's (agentFailure).
func (m *Manager) processError(ctx context.Context, sb *sandbox, op string, pid int, err error) error {
	if refused := spawnRefused(sb.rec.ID, err); refused != nil {
		return refused
	}
	st, ok := status.FromError(unwrapStatus(err))
	if ok {
		msg := safetext.Line(st.Message(), safetext.MaxLine)
		switch st.Code() {
		case codes.NotFound:
			return unknownProcess(sb.rec.ID, pid)
		case codes.FailedPrecondition:
			switch {
			case strings.Contains(msg, "has exited"):
				return errdefs.New(errdefs.CodeProcessExited, "%s process %d of sandbox %s: it has exited", op, pid, sb.rec.ID)
			case strings.Contains(msg, "no open stdin"), strings.Contains(msg, "reads a pty"):
				return errdefs.New(errdefs.CodeNoStdin, "%s process %d of sandbox %s: %s", op, pid, sb.rec.ID, msg).
					WithFix(nil, "start the process with stdin: true to write to it")
			case strings.Contains(msg, "has no pty"):
				return errdefs.New(errdefs.CodeNotPty, "%s process %d of sandbox %s: it has no terminal", op, pid, sb.rec.ID)
			}
		case codes.InvalidArgument, codes.OutOfRange:
			return errdefs.New(errdefs.CodeMalformed, "%s process %d of sandbox %s: %s", op, pid, sb.rec.ID, msg)
		case codes.Canceled:
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return m.agentFailure(ctx, sb, op, err)
}

// unwrapStatus finds the gRPC status error inside err's chain.
func unwrapStatus(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(interface{ GRPCStatus() *status.Status }); ok {
			return e
		}
	}
	return err
}

// signalName is signal n's name without "SIG", or its number.
func signalName(n int32) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return strings.TrimPrefix(name, "SIG")
	}
	return strconv.Itoa(int(n))
}
