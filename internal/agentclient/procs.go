package agentclient

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"google.golang.org/grpc"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Bounds of the process calls.
const (
	// eventMsgBytes is the largest process event accepted: a full output
	// chunk and room for the rest of the message.
	eventMsgBytes = agentv1.OutputChunkBytes + 4<<10
	// listMsgBytes is the largest List answer accepted.
	listMsgBytes = 16 << 20
)

// Events is one stream of a process's events, as Start and Attach return
// it. Every event is checked before Recv returns it: the kinds the agent
// sends, at most one started (with the expected pid) first, output chunks
// of a known stream at consistent offsets and of bounded size, one exited
// last. A stream that breaks these rules ends the session with a
// *ProtocolError. Not safe for concurrent Recv.
type Events struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	stream grpc.ServerStreamingClient[agentv1.ProcessEvent]
	op     string

	// pid is the process's, 0 until known; next is each stream's next
	// offset; started and exited say which of those events arrived.
	pid     int32
	next    [2]int64
	started bool
	exited  bool
}

// Start starts a process in the sandbox and returns its events: started,
// output, exited. The stream's deadline is the request's timeout_ms plus
// Options.ExecGrace, or Options.MaxExecDuration; ending it (Close, ctx)
// kills a tied process and leaves any other running.
func (c *Client) Start(ctx context.Context, req *agentv1.StartRequest) (*Events, error) {
	return c.events(ctx, "start", 0, c.execTimeout(req.GetExec().GetTimeoutMs()),
		func(ctx context.Context, opts ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.ProcessEvent], error) {
			return c.rpc.Start(ctx, req, opts...)
		})
}

// Attach streams the events of a process of the table from the request's
// offsets (see agentv1.AttachRequest), for up to Options.MaxExecDuration.
// The offsets should be where an earlier stream left off: the first chunk
// of each stream carries how many bytes the ring no longer held.
func (c *Client) Attach(ctx context.Context, req *agentv1.AttachRequest) (*Events, error) {
	if req.GetPid() <= 0 {
		return nil, fmt.Errorf("attach: pid %d is not a process", req.GetPid())
	}
	e, err := c.events(ctx, "attach", req.GetPid(), c.opts.MaxExecDuration,
		func(ctx context.Context, opts ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.ProcessEvent], error) {
			return c.rpc.Attach(ctx, req, opts...)
		})
	if e != nil {
		e.next = [2]int64{req.GetStdoutOffset(), req.GetStderrOffset()}
	}
	return e, err
}

func (c *Client) events(ctx context.Context, op string, pid int32, timeout time.Duration,
	open func(context.Context, ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.ProcessEvent], error)) (*Events, error) {
	ctx, cancel, err := c.call(ctx, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	stream, err := open(ctx, grpc.MaxCallRecvMsgSize(eventMsgBytes))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", op, c.callError(ctx, err))
	}
	return &Events{c: c, ctx: ctx, cancel: cancel, stream: stream, op: op, pid: pid}, nil
}

// Recv returns the next event, io.EOF after the exited event, or why the
// stream failed: the agent's status, a deadline, ErrClosed, or a
// *ProtocolError.
func (e *Events) Recv() (*agentv1.ProcessEvent, error) {
	ev, err := e.stream.Recv()
	switch {
	case err == io.EOF && e.exited:
		return nil, io.EOF
	case err == io.EOF:
		return nil, fmt.Errorf("%s: %w", e.op, e.c.violate("a process stream ended before its exit"))
	case err != nil:
		return nil, fmt.Errorf("%s: %w", e.op, e.c.callError(e.ctx, err))
	}
	if what := e.check(ev); what != "" {
		return nil, fmt.Errorf("%s: %w", e.op, e.c.violate(what))
	}
	return ev, nil
}

// Close ends the stream; a tied process is killed.
func (e *Events) Close() { e.cancel() }

// Pid is the process's pid, 0 until its started event arrived (and for a
// command that could not be run).
func (e *Events) Pid() int32 {
	if !e.started {
		return 0
	}
	return e.pid
}

// check applies the stream's rules to ev and advances its state; it
// returns what is wrong, or "".
func (e *Events) check(ev *agentv1.ProcessEvent) string {
	if e.exited {
		return "a process stream went on after its exit"
	}
	switch {
	case ev.GetStarted() != nil:
		pid := ev.GetStarted().GetPid()
		switch {
		case e.started || e.next != [2]int64{} && e.pid == 0:
			return "a process started twice, or after its output"
		case pid <= 0:
			return fmt.Sprintf("a process started with pid %d", pid)
		case e.pid != 0 && pid != e.pid:
			return fmt.Sprintf("process %d's stream started process %d", e.pid, pid)
		}
		e.pid, e.started = pid, true
	case ev.GetOutput() != nil:
		o := ev.GetOutput()
		s := 0
		switch o.GetStream() {
		case agentv1.Stream_STREAM_STDOUT:
		case agentv1.Stream_STREAM_STDERR:
			s = 1
		default:
			return fmt.Sprintf("output of unknown stream %d", o.GetStream())
		}
		n := int64(len(o.GetData()))
		switch {
		case n == 0 || n > agentv1.OutputChunkBytes:
			return fmt.Sprintf("an output chunk of %d bytes", n)
		case o.GetDropped() < 0 || o.GetOffset() != e.next[s]+o.GetDropped():
			return fmt.Sprintf("output at offset %d (dropped %d) where %d was next", o.GetOffset(), o.GetDropped(), e.next[s])
		}
		e.next[s] = o.GetOffset() + n
	case ev.GetExited() != nil:
		x := ev.GetExited()
		if x.GetStdoutEnd() < e.next[0] || x.GetStderrEnd() < e.next[1] {
			return fmt.Sprintf("an exit after %d/%d bytes of output, sent %d/%d", x.GetStdoutEnd(), x.GetStderrEnd(), e.next[0], e.next[1])
		}
		e.exited = true
	default:
		return "a process event of no known kind"
	}
	return ""
}

// unary runs one unary process call with Options.CallTimeout (or timeout
// when not 0).
func unary[Req, Resp any](ctx context.Context, c *Client, name string, timeout time.Duration,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, opts ...grpc.CallOption) (Resp, error) {
	var zero Resp
	if timeout == 0 {
		timeout = c.opts.CallTimeout
	}
	ctx, cancel, err := c.call(ctx, timeout)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	defer cancel()
	resp, err := call(ctx, req, opts...)
	if err := c.callError(ctx, err); err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return resp, nil
}

// WriteStdin writes data to the open stdin (or PTY) of process pid.
func (c *Client) WriteStdin(ctx context.Context, pid int32, data []byte) error {
	_, err := unary(ctx, c, "write stdin", 0, c.rpc.WriteStdin, &agentv1.WriteStdinRequest{Pid: pid, Data: data})
	return err
}

// CloseStdin closes the open stdin of process pid: it reads EOF.
func (c *Client) CloseStdin(ctx context.Context, pid int32) error {
	_, err := unary(ctx, c, "close stdin", 0, c.rpc.CloseStdin, &agentv1.CloseStdinRequest{Pid: pid})
	return err
}

// Signal sends sig to the process group of process pid.
func (c *Client) Signal(ctx context.Context, pid int32, sig syscall.Signal) error {
	_, err := unary(ctx, c, "signal", 0, c.rpc.Signal, &agentv1.SignalRequest{Pid: pid, Signal: int32(sig)})
	return err
}

// Resize sets the size of process pid's PTY.
func (c *Client) Resize(ctx context.Context, pid int32, rows, cols uint32) error {
	_, err := unary(ctx, c, "resize", 0, c.rpc.Resize, &agentv1.ResizeRequest{Pid: pid, Size: &agentv1.PtySize{Rows: rows, Cols: cols}})
	return err
}

// List describes the agent's processes, live and remembered, oldest first.
func (c *Client) List(ctx context.Context) ([]*agentv1.ProcessInfo, error) {
	resp, err := unary(ctx, c, "list processes", 0, c.rpc.List, &agentv1.ListRequest{}, grpc.MaxCallRecvMsgSize(listMsgBytes))
	if err != nil {
		return nil, err
	}
	if n := len(resp.GetProcesses()); n > agentv1.MaxProcesses {
		return nil, fmt.Errorf("list processes: %w", c.violate(fmt.Sprintf("a list of %d processes", n)))
	}
	return resp.GetProcesses(), nil
}

// Wait returns process pid's exit once it has exited, waiting up to
// Options.MaxExecDuration.
func (c *Client) Wait(ctx context.Context, pid int32) (*agentv1.Exited, error) {
	resp, err := unary(ctx, c, "wait", c.opts.MaxExecDuration, c.rpc.Wait, &agentv1.WaitRequest{Pid: pid})
	if err != nil {
		return nil, err
	}
	if resp.GetExited() == nil {
		return nil, fmt.Errorf("wait: %w", c.violate("a wait answered without an exit"))
	}
	return resp.GetExited(), nil
}

// psMsgBytes is the largest Ps answer accepted.
const psMsgBytes = 8 << 20

// Ps describes every process of the sandbox but the agent. An answer with
// more than agentv1.MaxPsEntries processes, a command or user name over
// its bound, or a pid that is not positive breaks the protocol.
func (c *Client) Ps(ctx context.Context) ([]*agentv1.PsEntry, error) {
	resp, err := unary(ctx, c, "ps", 0, c.rpc.Ps, &agentv1.PsRequest{}, grpc.MaxCallRecvMsgSize(psMsgBytes))
	if err != nil {
		return nil, err
	}
	ps := resp.GetProcesses()
	if len(ps) > agentv1.MaxPsEntries {
		return nil, fmt.Errorf("ps: %w", c.violate(fmt.Sprintf("a ps of %d processes", len(ps))))
	}
	for _, p := range ps {
		switch {
		case p.GetPid() <= 0 || p.GetPpid() < 0:
			return nil, fmt.Errorf("ps: %w", c.violate(fmt.Sprintf("a ps entry of pid %d, ppid %d", p.GetPid(), p.GetPpid())))
		case len(p.GetCommand()) > agentv1.MaxPsCommand || len(p.GetUser()) > agentv1.MaxPsUserBytes || len(p.GetState()) > 1:
			return nil, fmt.Errorf("ps: %w", c.violate("a ps entry over its bounds"))
		}
	}
	return ps, nil
}
