package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Exec runs one process in the sandbox and returns its output: a Start
// tied to the call, folded into one response. The call's deadline is the
// request's timeout_ms plus Options.ExecGrace (or Options.MaxExecDuration
// without one), unless ctx ends sooner; the process dies with the call. A
// command that ran, whatever its status, is a response; errors are the
// agent's gRPC status (InvalidArgument, ResourceExhausted, ...), a
// deadline, or ErrClosed (a *ProtocolError for a malformed stream).
func (c *Client) Exec(ctx context.Context, req *agentv1.ExecRequest) (*agentv1.ExecResponse, error) {
	limit := c.opts.MaxOutputBytes
	events, err := c.Start(ctx, &agentv1.StartRequest{Exec: withOutputCap(req, limit), Tied: true})
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	defer events.Close()
	resp := &agentv1.ExecResponse{}
	for {
		ev, err := events.Recv()
		if errors.Is(err, io.EOF) {
			return resp, nil
		}
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		fold(resp, ev, limit)
	}
}

// fold adds one checked event to resp, keeping at most limit bytes of
// each stream: more is cut and flagged truncated (the agent was asked for
// no more).
func fold(resp *agentv1.ExecResponse, ev *agentv1.ProcessEvent, limit int64) {
	switch {
	case ev.GetStarted() != nil:
		resp.SpawnUs = ev.GetStarted().GetSpawnUs()
	case ev.GetOutput() != nil:
		o := ev.GetOutput()
		buf, trunc := &resp.Stdout, &resp.StdoutTruncated
		if o.GetStream() == agentv1.Stream_STREAM_STDERR {
			buf, trunc = &resp.Stderr, &resp.StderrTruncated
		}
		data := o.GetData()
		if room := limit - int64(len(*buf)); int64(len(data)) > room {
			data, *trunc = data[:room], true
		}
		*buf = append(*buf, data...)
	case ev.GetExited() != nil:
		e := ev.GetExited()
		resp.Exited = !e.GetTimedOut()
		resp.TimedOut = e.GetTimedOut()
		resp.ExitCode = e.GetExitCode()
		resp.DurationUs = e.GetDurationUs()
		resp.OomKilled = e.GetOomKilled()
		resp.StdoutTruncated = resp.StdoutTruncated || e.GetStdoutTruncated()
		resp.StderrTruncated = resp.StderrTruncated || e.GetStderrTruncated()
	}
}

// withOutputCap returns req with max_output_bytes set to limit when it asks
// for more, or for the agent's default, without modifying the caller's req:
// a copy of the whole message, so that no field can be left behind.
func withOutputCap(req *agentv1.ExecRequest, limit int64) *agentv1.ExecRequest {
	if n := req.GetMaxOutputBytes(); n > 0 && n <= limit {
		return req
	}
	if req == nil {
		req = &agentv1.ExecRequest{}
	}
	req = proto.CloneOf(req)
	req.MaxOutputBytes = limit
	return req
}

// execTimeout is the deadline of a process stream whose request has
// timeout_ms: that plus Options.ExecGrace, leaving the agent time to kill
// the process and answer; without one, Options.MaxExecDuration.
func (c *Client) execTimeout(timeoutMs int64) time.Duration {
	if timeoutMs > 0 {
		return time.Duration(timeoutMs)*time.Millisecond + c.opts.ExecGrace
	}
	return c.opts.MaxExecDuration
}
