package envd

// process.Process's streams, Start and Connect: a start event with the
// pid, the process's output as data events with keepalives between them,
// then its end. The process is a hutch background process: it outlives
// the stream, and Connect re-attaches to it by pid or tag.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Keepalive periods: the client's Keepalive-Ping-Interval (seconds),
// bounded.
const (
	keepaliveDefault = 50 * time.Second
	keepaliveMin     = time.Second
	keepaliveMax     = 5 * time.Minute
)

// Start starts a process and streams it. Connect-Timeout-Ms, when sent,
// is the process's lifetime: hutch kills it when the stream's deadline
// passes.
func (s *processService) Start(ctx context.Context, req *connect.Request[pb.StartRequest], out *connect.ServerStream[pb.StartResponse]) error {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return err
	}
	start, err := startRequest(ctx, sc, req.Msg, cwdOf(req.Msg))
	if err != nil {
		return err
	}
	// One agent call starts the process and streams it (issue 40).
	st, err := stream(ctx, s.t, api.FnProcessStartStream, start)
	if err != nil {
		return err
	}
	defer st.Close()
	first, err := st.Expect(ctx, api.EventStart)
	if err != nil {
		return connectError(err)
	}
	begun, ok := first.Data.(api.ProcessStartResponse)
	if !ok {
		return connectError(errdefs.New(errdefs.CodeInternal, "a process's start event carried a %T", first.Data))
	}
	send := func(ev *pb.ProcessEvent) error { return out.Send(&pb.StartResponse{Event: ev}) }
	return s.relay(ctx, req.Header(), st, begun.Pid, start.Pty != nil, send)
}

// Connect streams a running process from its output's current end.
func (s *processService) Connect(ctx context.Context, req *connect.Request[pb.ConnectRequest], out *connect.ServerStream[pb.ConnectResponse]) error {
	sc, pid, err := s.selected(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return err
	}
	info, err := call[api.ProcessInfo](ctx, s.t, api.FnProcessGet, api.ProcessRequest{SandboxID: sc.sandbox, Pid: pid})
	if err != nil {
		return err
	}
	send := func(ev *pb.ProcessEvent) error { return out.Send(&pb.ConnectResponse{Event: ev}) }
	follow := api.ProcessOutputRequest{SandboxID: sc.sandbox, Pid: pid, Follow: true,
		StdoutOffset: info.StdoutBytes, StderrOffset: info.StderrBytes}
	return s.follow(ctx, req.Header(), follow, info.Pty, send)
}

// cwdOf is the directory a start request runs in: its cwd, a relative
// one under the user's home, or that home, as envd starts commands. The
// agent finds the home of the user the process runs as when it starts it
// (api.WorkdirHome), so no call asks it first.
func cwdOf(m *pb.StartRequest) string {
	switch cwd := m.GetProcess().GetCwd(); {
	case cwd == "":
		return api.WorkdirHome
	case strings.HasPrefix(cwd, "/"):
		return cwd
	default:
		return api.WorkdirHome + "/" + cwd
	}
}

// startRequest is hutch's start of an E2B start request, run in workdir.
// An unset stdin is an open one, as envd has it.
func startRequest(ctx context.Context, sc scope, m *pb.StartRequest, workdir string) (api.ProcessStartRequest, error) {
	cfg := m.GetProcess()
	if cfg.GetCmd() == "" {
		return api.ProcessStartRequest{}, invalid("process.cmd is required")
	}
	req := api.ProcessStartRequest{
		SandboxID: sc.sandbox,
		User:      sc.user,
		Argv:      append([]string{cfg.GetCmd()}, cfg.GetArgs()...),
		Workdir:   workdir,
		Tag:       m.GetTag(),
		Stdin:     m.Stdin == nil || m.GetStdin(),
	}
	for k, v := range cfg.GetEnvs() {
		req.Env = append(req.Env, k+"="+v)
	}
	if m.Pty != nil {
		size, err := ptySize(m.GetPty())
		if err != nil {
			return req, err
		}
		req.Pty, req.Stdin = size, true
	}
	if deadline, ok := ctx.Deadline(); ok {
		req.TimeoutMs = uint64(max(time.Until(deadline).Milliseconds(), 1))
	}
	return req, nil
}

// follow sends the start event, then the process's output from req's
// offsets as data events (pty ones for a terminal), a keepalive whenever
// nothing else was sent for the client's interval, and its end.
func (s *processService) follow(ctx context.Context, h http.Header, req api.ProcessOutputRequest, pty bool, send func(*pb.ProcessEvent) error) error {
	st, err := stream(ctx, s.t, api.FnProcessOutput, req)
	if err != nil {
		return err
	}
	defer st.Close()
	return s.relay(ctx, h, st, req.Pid, pty, send)
}

// pausePoll is how often a silent stream asks whether its sandbox was
// paused (a freeze leaves the agent's stream open and silent).
const pausePoll = 2 * time.Second

// relay sends the start event of process pid, then st's output as data
// events (pty ones for a terminal), a keepalive whenever nothing else was
// sent for the client's interval, and its end. A stream whose sandbox is
// paused under it (by a call or at the end of its lifetime) is cut, as
// E2B's are.
func (s *processService) relay(ctx context.Context, h http.Header, st *functions.Stream, pid int, pty bool, send func(*pb.ProcessEvent) error) error {
	start := &pb.ProcessEvent_Start{Start: &pb.ProcessEvent_StartEvent{Pid: uint32(pid)}}
	if err := send(&pb.ProcessEvent{Event: start}); err != nil {
		return err
	}
	keepalive, sent := keepaliveOf(h), time.Now()
	for {
		ev, err := nextOrIdle(ctx, st, min(keepalive, pausePoll))
		switch {
		case errors.Is(err, errIdle):
			if err = s.notPaused(ctx, h); err == nil && time.Since(sent) >= keepalive {
				err, sent = send(&pb.ProcessEvent{Event: &pb.ProcessEvent_Keepalive{Keepalive: &pb.ProcessEvent_KeepAlive{}}}), time.Now()
			}
		case errors.Is(err, io.EOF):
			end, ok := st.Result().(api.ProcessInfo)
			if !ok {
				return connectError(errdefs.New(errdefs.CodeInternal, "a process's output ended with a %T", st.Result()))
			}
			return send(&pb.ProcessEvent{Event: &pb.ProcessEvent_End{End: endEvent(end)}})
		case err == nil:
			err, sent = sendData(ev, pty, send), time.Now()
		}
		if err != nil {
			abortIfGone(err)
			return connectError(err)
		}
	}
}

// notPaused is S005 when the sandbox of a stream's request (h) is paused
// or pausing; nil otherwise, or when it cannot be asked (the stream's own
// error then tells).
func (s *processService) notPaused(ctx context.Context, h http.Header) error {
	sc, err := scopeOf(h, "")
	if err != nil {
		return nil
	}
	info, err := functions.Call[api.SandboxInfo](ctx, s.t, api.FnGet, api.GetRequest{SandboxID: sc.sandbox})
	if err == nil && (info.State == "paused" || info.State == "pausing") {
		return errdefs.New(errdefs.CodePaused, "sandbox %s was paused", sc.sandbox)
	}
	return nil
}

// sendData sends an stdout or stderr event of the output stream.
func sendData(ev functions.Event, pty bool, send func(*pb.ProcessEvent) error) error {
	chunk, ok := ev.Data.(api.OutputChunk)
	if !ok || (ev.Type != api.EventStdout && ev.Type != api.EventStderr) {
		return nil
	}
	data := []byte(chunk.Data)
	if chunk.Base64 {
		var err error
		if data, err = base64.StdEncoding.DecodeString(chunk.Data); err != nil {
			return errdefs.Wrap(errdefs.CodeInternal, err, "decoding a process's output")
		}
	}
	if len(data) == 0 {
		return nil
	}
	d := &pb.ProcessEvent_DataEvent{}
	switch {
	case pty:
		d.Output = &pb.ProcessEvent_DataEvent_Pty{Pty: data}
	case ev.Type == api.EventStderr:
		d.Output = &pb.ProcessEvent_DataEvent_Stderr{Stderr: data}
	default:
		d.Output = &pb.ProcessEvent_DataEvent_Stdout{Stdout: data}
	}
	return send(&pb.ProcessEvent{Event: &pb.ProcessEvent_Data{Data: d}})
}

// endEvent is envd's end of a process: its exit code and "exit status N"
// when it exited, -1 and "signal: NAME" when a signal killed it.
func endEvent(p api.ProcessInfo) *pb.ProcessEvent_EndEvent {
	end := &pb.ProcessEvent_EndEvent{ExitCode: -1}
	switch {
	case p.Signal != "":
		end.Status = "signal: " + p.Signal
	case p.ExitCode != nil:
		end.ExitCode, end.Exited = int32(*p.ExitCode), true
		end.Status = "exit status " + strconv.Itoa(*p.ExitCode)
	}
	if p.TimedOut {
		msg := "the process's time ran out"
		end.Error = &msg
	}
	return end
}

// errIdle is nextOrIdle's answer when idle passed without an event.
var errIdle = errors.New("idle")

// nextOrIdle is st's next event, or errIdle when none came within idle
// (the event stays queued for the next call).
func nextOrIdle(ctx context.Context, st *functions.Stream, idle time.Duration) (functions.Event, error) {
	wait, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	ev, err := st.Next(wait)
	if err != nil && wait.Err() != nil && ctx.Err() == nil {
		return ev, errIdle
	}
	return ev, err
}

// keepaliveOf is the keepalive period a client asks for in h.
func keepaliveOf(h http.Header) time.Duration {
	sec, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval"))
	if err != nil || sec <= 0 {
		return keepaliveDefault
	}
	return min(max(time.Duration(sec)*time.Second, keepaliveMin), keepaliveMax)
}
