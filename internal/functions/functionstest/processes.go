package functionstest

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

var _ functions.Processes = (*Fake)(nil)

// ExecStream runs Exec (recorded as "Exec") and streams its result: a start
// event with pid 1, its stdout and stderr as one chunk each, then exit.
func (f *Fake) ExecStream(ctx context.Context, req api.ExecRequest, emit func(string, any) error) (api.ExecResponse, error) {
	res, err := f.Exec(ctx, req)
	if err != nil {
		return res, err
	}
	if err := emit(api.EventStart, api.ProcessStartResponse{Pid: 1}); err != nil {
		return api.ExecResponse{}, err
	}
	for _, out := range []struct{ event, data string }{{api.EventStdout, res.Stdout}, {api.EventStderr, res.Stderr}} {
		if out.data == "" {
			continue
		}
		if err := emit(out.event, api.OutputChunk{Data: out.data}); err != nil {
			return api.ExecResponse{}, err
		}
	}
	res.Stdout, res.Stderr = "", ""
	return res, emit(api.EventExit, res)
}

// process answers a process call through ProcessFunc, or S230 by default.
func process[Resp any](f *Fake, ctx context.Context, method string, req any) (Resp, error) {
	return answer[Resp](f, f.ProcessFunc, ctx, method, req, errdefs.New(errdefs.CodeProcessNotFound, "no such process"))
}

// answer records a call and answers it through fn, or with missing when
// fn is nil.
func answer[Resp any](f *Fake, fn func(context.Context, string, any) (any, error), ctx context.Context, method string, req any, missing error) (Resp, error) {
	f.record(method, req)
	var zero Resp
	if fn == nil {
		return zero, missing
	}
	v, err := fn(ctx, method, req)
	if err != nil {
		return zero, err
	}
	return v.(Resp), nil
}

func (f *Fake) StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error) {
	return process[api.ProcessStartResponse](f, ctx, "StartProcess", req)
}

func (f *Fake) GetProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessInfo, error) {
	return process[api.ProcessInfo](f, ctx, "GetProcess", req)
}

func (f *Fake) ListProcesses(ctx context.Context, req api.ProcessListRequest) (api.ProcessListResponse, error) {
	return process[api.ProcessListResponse](f, ctx, "ListProcesses", req)
}

func (f *Fake) ProcessOutput(ctx context.Context, req api.ProcessOutputRequest) (api.ProcessOutputResponse, error) {
	return process[api.ProcessOutputResponse](f, ctx, "ProcessOutput", req)
}

// FollowProcess answers through ProcessFunc with the emit function as the
// request's companion: ProcessFunc gets a FollowCall.
func (f *Fake) FollowProcess(ctx context.Context, req api.ProcessOutputRequest, emit func(string, any) error) (api.ProcessInfo, error) {
	return process[api.ProcessInfo](f, ctx, "FollowProcess", FollowCall{Req: req, Emit: emit})
}

// FollowCall is the request FollowProcess hands to ProcessFunc.
type FollowCall struct {
	Req  api.ProcessOutputRequest
	Emit func(string, any) error
}

func (f *Fake) WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error) {
	return process[api.ProcessStdinResponse](f, ctx, "WriteStdin", req)
}

func (f *Fake) SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error) {
	return process[api.ProcessSignalResponse](f, ctx, "SignalProcess", req)
}

func (f *Fake) KillProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessSignalResponse, error) {
	return process[api.ProcessSignalResponse](f, ctx, "KillProcess", req)
}

func (f *Fake) WaitProcess(ctx context.Context, req api.ProcessWaitRequest) (api.ProcessInfo, error) {
	return process[api.ProcessInfo](f, ctx, "WaitProcess", req)
}

func (f *Fake) ResizeProcess(ctx context.Context, req api.ProcessResizeRequest) (api.ProcessResizeResponse, error) {
	return process[api.ProcessResizeResponse](f, ctx, "ResizeProcess", req)
}

// StartStream answers through ProcessFunc with the emit function as the
// request's companion: ProcessFunc gets a StartStreamCall (issue 40).
func (f *Fake) StartStream(ctx context.Context, req api.ProcessStartRequest, emit func(string, any) error) (api.ProcessInfo, error) {
	return process[api.ProcessInfo](f, ctx, "StartStream", StartStreamCall{Req: req, Emit: emit})
}

// StartStreamCall is the request StartStream hands to ProcessFunc.
type StartStreamCall struct {
	Req  api.ProcessStartRequest
	Emit func(string, any) error
}
