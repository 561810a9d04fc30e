package agent

import (
	"context"
	"math"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// The process service: Start, Attach and the calls on a running process.
// A command that cannot be run is a normal stream (its reason on stderr,
// exit status 126 or 127); only a malformed request, a full table or a
// spawn the sandbox has no resources for is a gRPC error.

// Start starts a process and streams its events.
func (s *Server) Start(req *agentv1.StartRequest, stream grpc.ServerStreamingServer[agentv1.ProcessEvent]) error {
	dir, err := checkStart(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	ereq := req.GetExec()
	cmd := ereq.GetArgv()[0]
	path, lerr := lookPath(cmd, ereq.GetEnv(), dir)
	if lerr == nil {
		if err := s.procs.reserve(); err != nil {
			return err
		}
		p, err := spawn(path, dir, req, s.procs.exited)
		if err == nil {
			s.procs.add(p)
			return s.follow(stream, p, req)
		}
		s.procs.unreserve()
		if lerr, err = spawnFailure(cmd, err); err != nil {
			return err
		}
	}
	for _, ev := range failureEvents(cmd, lerr) {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

// follow streams the events of p, just started by req; a tied process is
// killed when the stream ends first.
func (s *Server) follow(stream grpc.ServerStreamingServer[agentv1.ProcessEvent], p *proc, req *agentv1.StartRequest) error {
	if p.tied {
		defer p.kill()
	}
	limit := outputLimit(req.GetExec().GetMaxOutputBytes())
	if limit == 0 {
		if err := stream.Send(p.startedEvent()); err != nil {
			return err
		}
		if req.GetLossless() {
			limit = math.MaxInt64 // a cap never reached: every byte is held for the stream
		}
		return p.follow(stream.Context(), [2]int64{}, limit, stream.Send)
	}
	// A capture is read whole at its end: its started event waits for the
	// next event and goes out with it, one write to the host instead of
	// two for the many short commands.
	started := p.startedEvent()
	return p.follow(stream.Context(), [2]int64{}, limit, func(ev *agentv1.ProcessEvent) error {
		if started != nil {
			if err := stream.Send(started); err != nil {
				return err
			}
			started = nil
		}
		return stream.Send(ev)
	})
}

// startedEvent is the first event of p's streams.
func (p *proc) startedEvent() *agentv1.ProcessEvent {
	return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Started{Started: &agentv1.Started{
		Pid:         int32(p.pid),
		StartUnixNs: p.started.UnixNano(),
		SpawnUs:     p.spawn.Microseconds(),
	}}}
}

// Attach streams a process's events from the request's offsets.
func (s *Server) Attach(req *agentv1.AttachRequest, stream grpc.ServerStreamingServer[agentv1.ProcessEvent]) error {
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return err
	}
	from := [2]int64{req.GetStdoutOffset(), req.GetStderrOffset()}
	p.mu.Lock()
	ends := [2]int64{p.out[stdout].end, p.out[stderr].end}
	p.mu.Unlock()
	for i, off := range from {
		if off < 0 || off > ends[i] {
			return status.Errorf(codes.OutOfRange, "offset %d of %s is outside [0, %d]", off, streamOf[i], ends[i])
		}
	}
	if err := stream.Send(p.startedEvent()); err != nil {
		return err
	}
	return p.follow(stream.Context(), from, 0, stream.Send)
}

// WriteStdin writes to a process's open stdin.
func (s *Server) WriteStdin(ctx context.Context, req *agentv1.WriteStdinRequest) (*agentv1.WriteStdinResponse, error) {
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return nil, err
	}
	if err := p.writeStdin(ctx, req.GetData()); err != nil {
		return nil, err
	}
	return &agentv1.WriteStdinResponse{}, nil
}

// CloseStdin closes a process's open stdin.
func (s *Server) CloseStdin(_ context.Context, req *agentv1.CloseStdinRequest) (*agentv1.CloseStdinResponse, error) {
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return nil, err
	}
	switch {
	case p.pty != nil:
		return nil, status.Errorf(codes.FailedPrecondition, "process %d reads a pty: write its EOF character instead", p.pid)
	case !p.keepIn:
		return nil, status.Errorf(codes.FailedPrecondition, "process %d has no open stdin", p.pid)
	}
	p.closeStdin()
	return &agentv1.CloseStdinResponse{}, nil
}

// Signal sends a signal to a process's group.
func (s *Server) Signal(_ context.Context, req *agentv1.SignalRequest) (*agentv1.SignalResponse, error) {
	sig := req.GetSignal()
	if sig <= 0 || sig > 64 {
		return nil, status.Errorf(codes.InvalidArgument, "signal %d is not a signal", sig)
	}
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return nil, err
	}
	if err := p.signal(syscall.Signal(sig)); err != nil {
		return nil, err
	}
	return &agentv1.SignalResponse{}, nil
}

// Resize sets the size of a process's PTY.
func (s *Server) Resize(_ context.Context, req *agentv1.ResizeRequest) (*agentv1.ResizeResponse, error) {
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return nil, err
	}
	if err := p.resize(req.GetSize()); err != nil {
		return nil, err
	}
	return &agentv1.ResizeResponse{}, nil
}

// List describes the processes of the table.
func (s *Server) List(context.Context, *agentv1.ListRequest) (*agentv1.ListResponse, error) {
	return &agentv1.ListResponse{Processes: s.procs.list()}, nil
}

// Wait returns once a process has exited.
func (s *Server) Wait(ctx context.Context, req *agentv1.WaitRequest) (*agentv1.WaitResponse, error) {
	p, err := s.procs.get(req.GetPid())
	if err != nil {
		return nil, err
	}
	e, err := p.wait(ctx)
	if err != nil {
		return nil, err
	}
	return &agentv1.WaitResponse{Exited: e}, nil
}

// KillAll kills every live process of the table, detached ones included,
// as the end of a sandbox's PID 1 does. An agent embedded in another
// process (the in-process test runtime) calls it when its sandbox ends.
func (s *Server) KillAll() { s.procs.killAll() }
