package envd

// process.Process's unary methods: each a sandbox::process::* function of
// the process the selector names.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
)

// maxListed bounds how many processes List describes.
const maxListed = 256

// processService is process.Process.
type processService struct{ *server }

var _ processconnect.ProcessHandler = (*processService)(nil)

// List describes the running processes hutch started in the sandbox.
func (s *processService) List(ctx context.Context, req *connect.Request[pb.ListRequest]) (*connect.Response[pb.ListResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	all, err := call[api.ProcessListResponse](ctx, s.t, api.FnProcessList, api.ProcessListRequest{SandboxID: sc.sandbox})
	if err != nil {
		return nil, err
	}
	out := &pb.ListResponse{}
	for _, p := range all.Processes {
		if !p.Hutch || len(out.Processes) >= maxListed {
			continue
		}
		info, err := call[api.ProcessInfo](ctx, s.t, api.FnProcessGet, api.ProcessRequest{SandboxID: sc.sandbox, Pid: p.Pid})
		if err != nil || info.State != api.ProcessRunning || len(info.Argv) == 0 {
			continue // an exec's process, or one that just ended
		}
		pi := &pb.ProcessInfo{Pid: uint32(info.Pid),
			Config: &pb.ProcessConfig{Cmd: info.Argv[0], Args: info.Argv[1:], Envs: map[string]string{}}}
		if info.Tag != "" {
			pi.Tag = &info.Tag
		}
		out.Processes = append(out.Processes, pi)
	}
	return connect.NewResponse(out), nil
}

// SendInput writes to a process's stdin (or terminal).
func (s *processService) SendInput(ctx context.Context, req *connect.Request[pb.SendInputRequest]) (*connect.Response[pb.SendInputResponse], error) {
	sc, pid, err := s.selected(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := s.input(ctx, sc, pid, req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.SendInputResponse{}), nil
}

// StreamInput writes a stream of inputs, in order, to the process its
// first message names.
func (s *processService) StreamInput(ctx context.Context, st *connect.ClientStream[pb.StreamInputRequest]) (*connect.Response[pb.StreamInputResponse], error) {
	pid := 0
	var sc scope
	for st.Receive() {
		switch ev := st.Msg().GetEvent().(type) {
		case *pb.StreamInputRequest_Start:
			if pid != 0 {
				return nil, invalid("a second start event")
			}
			var err error
			if sc, pid, err = s.selected(ctx, st.RequestHeader(), ev.Start.GetProcess()); err != nil {
				return nil, err
			}
		case *pb.StreamInputRequest_Data:
			if pid == 0 {
				return nil, invalid("a data event before the start event")
			}
			if err := s.input(ctx, sc, pid, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := st.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, connectError(err)
	}
	return connect.NewResponse(&pb.StreamInputResponse{}), nil
}

// input writes in to process pid.
func (s *processService) input(ctx context.Context, sc scope, pid int, in *pb.ProcessInput) error {
	data := in.GetStdin()
	if data == nil {
		data = in.GetPty()
	}
	if len(data) == 0 {
		return nil
	}
	_, err := call[api.ProcessStdinResponse](ctx, s.t, api.FnProcessStdin, api.ProcessStdinRequest{
		SandboxID: sc.sandbox, Pid: pid, Data: base64.StdEncoding.EncodeToString(data), Base64: true})
	return err
}

// SendSignal sends SIGTERM or SIGKILL to a process's group.
func (s *processService) SendSignal(ctx context.Context, req *connect.Request[pb.SendSignalRequest]) (*connect.Response[pb.SendSignalResponse], error) {
	sc, pid, err := s.selected(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	var sig string
	switch req.Msg.GetSignal() {
	case pb.Signal_SIGNAL_SIGKILL:
		sig = "KILL"
	case pb.Signal_SIGNAL_SIGTERM:
		sig = "TERM"
	default:
		return nil, invalid("signal %d is not SIGTERM (15) or SIGKILL (9)", req.Msg.GetSignal())
	}
	if _, err := call[api.ProcessSignalResponse](ctx, s.t, api.FnProcessSignal, api.ProcessSignalRequest{SandboxID: sc.sandbox, Pid: pid, Signal: sig}); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.SendSignalResponse{}), nil
}

// CloseStdin closes a process's stdin: it reads EOF.
func (s *processService) CloseStdin(ctx context.Context, req *connect.Request[pb.CloseStdinRequest]) (*connect.Response[pb.CloseStdinResponse], error) {
	sc, pid, err := s.selected(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if _, err := call[api.ProcessStdinResponse](ctx, s.t, api.FnProcessStdin, api.ProcessStdinRequest{SandboxID: sc.sandbox, Pid: pid, Close: true}); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.CloseStdinResponse{}), nil
}

// Update resizes a process's terminal.
func (s *processService) Update(ctx context.Context, req *connect.Request[pb.UpdateRequest]) (*connect.Response[pb.UpdateResponse], error) {
	sc, pid, err := s.selected(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		size, err := ptySize(req.Msg.GetPty())
		if err != nil {
			return nil, err
		}
		if _, err := call[api.ProcessResizeResponse](ctx, s.t, api.FnProcessResize, api.ProcessResizeRequest{SandboxID: sc.sandbox, Pid: pid, PtySize: *size}); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(&pb.UpdateResponse{}), nil
}

// ptySize is p's size as hutch's, which must fit a terminal.
func ptySize(p *pb.PTY) (*api.PtySize, error) {
	cols, rows := p.GetSize().GetCols(), p.GetSize().GetRows()
	if cols == 0 || rows == 0 || cols > 0xffff || rows > 0xffff {
		return nil, invalid("pty size %dx%d is not between 1x1 and 65535x65535", cols, rows)
	}
	return &api.PtySize{Cols: uint16(cols), Rows: uint16(rows)}, nil
}

// selected is the scope of a request and the pid its selector names: a
// pid, or the first running process hutch started with that tag.
func (s *processService) selected(ctx context.Context, h http.Header, sel *pb.ProcessSelector) (scope, int, error) {
	sc, err := scopeOf(h, "")
	if err != nil {
		return sc, 0, err
	}
	switch v := sel.GetSelector().(type) {
	case *pb.ProcessSelector_Pid:
		if v.Pid == 0 || v.Pid > 1<<22 {
			return sc, 0, invalid("pid %d is not a process id", v.Pid)
		}
		return sc, int(v.Pid), nil
	case *pb.ProcessSelector_Tag:
		all, err := call[api.ProcessListResponse](ctx, s.t, api.FnProcessList, api.ProcessListRequest{SandboxID: sc.sandbox})
		if err != nil {
			return sc, 0, err
		}
		for _, p := range all.Processes {
			if p.Hutch && p.Tag == v.Tag {
				return sc, p.Pid, nil
			}
		}
		return sc, 0, notFound("no process with tag %q", v.Tag)
	}
	return sc, 0, invalid("the process selector names no pid or tag")
}
