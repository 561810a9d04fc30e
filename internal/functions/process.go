package functions

import (
	"context"
	"reflect"

	"github.com/hutch-dev/hutch/api"
)

// Processes are the process functions' dependency: the processes service
// (internal/sandbox/procsvc).
type Processes interface {
	StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error)
	GetProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessInfo, error)
	ListProcesses(ctx context.Context, req api.ProcessListRequest) (api.ProcessListResponse, error)
	ProcessOutput(ctx context.Context, req api.ProcessOutputRequest) (api.ProcessOutputResponse, error)
	FollowProcess(ctx context.Context, req api.ProcessOutputRequest, emit func(event string, data any) error) (api.ProcessInfo, error)
	WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error)
	SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error)
	KillProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessSignalResponse, error)
	WaitProcess(ctx context.Context, req api.ProcessWaitRequest) (api.ProcessInfo, error)
	ResizeProcess(ctx context.Context, req api.ProcessResizeRequest) (api.ProcessResizeResponse, error)
	ExecStream(ctx context.Context, req api.ExecRequest, emit func(event string, data any) error) (api.ExecResponse, error)
	// issue 40: start and follow in one call.
	StartStream(ctx context.Context, req api.ProcessStartRequest, emit func(event string, data any) error) (api.ProcessInfo, error)
}

// registerProcesses adds sandbox::process::* and the streamed exec, when
// the table has Processes.
func registerProcesses(t *Table) {
	p := t.deps.Processes
	if p == nil {
		return
	}
	addStream(t, api.FnExecStream, "Execute a command and stream its output as it is written: start, stdout, stderr and exit events (hutch extension)",
		func(ctx context.Context, req api.ExecRequest, e Emitter) (api.ExecResponse, error) {
			return p.ExecStream(ctx, req, e.emitData)
		})
	add(t, api.FnProcessStart, "Start a background process that outlives its caller; answers its pid", p.StartProcess)
	add(t, api.FnProcessGet, "Describe a process hutch started: state, exit status, output so far", p.GetProcess)
	add(t, api.FnProcessList, "List every process of a sandbox (pid, ppid, user, command, state, cpu %, rss), hutch's marked", p.ListProcesses)
	addOutput(t, p)
	add(t, api.FnProcessStdin, "Write to a process's open stdin, or close it", p.WriteStdin)
	add(t, api.FnProcessSignal, "Send a signal (TERM by default) to a process's group", p.SignalProcess)
	add(t, api.FnProcessKill, "Kill a process's group (SIGKILL)", p.KillProcess)
	add(t, api.FnProcessWait, "Wait until a process exits or timeout_ms passes; answers its state", p.WaitProcess)
	add(t, api.FnProcessResize, "Set the size of a process's terminal", p.ResizeProcess)
	if l, ok := p.(ProcessLogs); ok {
		addStream(t, api.FnProcessLogs, "The output of a sandbox's background processes as log lines tagged with pid and tag; with follow, as it is written, until the sandbox stops (hutch extension)",
			func(ctx context.Context, req api.LogsRequest, e Emitter) (struct{}, error) {
				return struct{}{}, l.StreamLogs(ctx, req, e.emitData)
			})
	}
	// issue 40: start and follow in one call.
	addStream(t, api.FnProcessStartStream, "Start a background process that outlives its caller and stream its output until it exits: start, stdout, stderr and exit events (hutch extension)",
		func(ctx context.Context, req api.ProcessStartRequest, e Emitter) (api.ProcessInfo, error) {
			return p.StartStream(ctx, req, e.emitData)
		})
}

// ProcessLogs is the combined output of a sandbox's background processes
// (sandbox::process::logs), when Processes has it.
type ProcessLogs interface {
	StreamLogs(ctx context.Context, req api.LogsRequest, emit func(event string, data any) error) error
}

// addOutput adds sandbox::process::output: one answer, or with follow a
// stream until the process exits.
func addOutput(t *Table, p Processes) {
	follow := func(ctx context.Context, req api.ProcessOutputRequest) (any, error) {
		return NewStream(ctx, func(ctx context.Context, e Emitter) (any, error) {
			return p.FollowProcess(ctx, req, e.emitData)
		}, func(err error) { t.observe(api.FnProcessOutput, err) }), nil
	}
	typed := func(ctx context.Context, req api.ProcessOutputRequest) (any, error) {
		if req.Follow {
			return follow(ctx, req)
		}
		resp, err := p.ProcessOutput(ctx, req)
		t.observe(api.FnProcessOutput, err)
		return resp, err
	}
	register(t, Function{ID: api.FnProcessOutput, Description: "Read a process's output from byte offsets; with follow, stream it until the process exits", Streams: true,
		Response: reflect.TypeFor[api.ProcessOutputResponse]()}, api.FnProcessOutput, typed)
}

// emitData emits one event whose data is a JSON value.
func (e Emitter) emitData(event string, data any) error {
	return e.Emit(Event{Type: event, Data: data})
}
