package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Interpreter is the interpreter functions' dependency: the sandbox
// manager.
type Interpreter interface {
	CreateContext(ctx context.Context, req api.ContextCreateRequest) (api.ContextInfo, error)
	ListContexts(ctx context.Context, req api.ContextListRequest) (api.ContextListResponse, error)
	RestartContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error)
	DeleteContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error)
	Interrupt(ctx context.Context, req api.ContextRequest) (api.InterruptResponse, error)
	RunCode(ctx context.Context, req api.RunCodeRequest, emit func(event string, data any) error) (api.CellResult, error)
	Install(ctx context.Context, req api.InstallRequest, emit func(event string, data any) error) (api.ExecResponse, error)
}

// registerInterpreter adds sandbox::interpreter::*, when the table has an
// Interpreter.
func registerInterpreter(t *Table) {
	in := t.deps.Interpreter
	if in == nil {
		return
	}
	add(t, api.FnContextCreate, "Start an interpreter context in a sandbox (python, javascript or bash) that keeps its variables, imports and working directory across cells", in.CreateContext)
	add(t, api.FnContextList, "List a sandbox's interpreter contexts", in.ListContexts)
	add(t, api.FnContextRestart, "Start a context's interpreter afresh (its state is lost)", in.RestartContext)
	add(t, api.FnContextDelete, "Stop an interpreter context", in.DeleteContext)
	add(t, api.FnInterrupt, "Interrupt the cell running in a context (SIGINT); the context keeps its state", in.Interrupt)
	addStream(t, api.FnRunCode, "Run a cell of code in a context (or the sandbox's default context of a language): stdout and stderr as they are written, then the result: the last expression's value by MIME type (text, images, HTML...), figures, or the error with its traceback",
		func(ctx context.Context, req api.RunCodeRequest, e Emitter) (api.CellResult, error) {
			return in.RunCode(ctx, req, e.emitData)
		})
	addStream(t, api.FnInstall, "Install packages into a sandbox with pip or npm from the operator's package indexes (needs network: true): the tool's output as it writes, then its exit",
		func(ctx context.Context, req api.InstallRequest, e Emitter) (api.ExecResponse, error) {
			return in.Install(ctx, req, e.emitData)
		})
}

// Ports are the port functions' dependency: the port service (internal/sandbox/portsvc).
type Ports interface {
	ExposePort(ctx context.Context, req api.PortExposeRequest) (api.PortInfo, error)
	ListPorts(ctx context.Context, req api.PortListRequest) (api.PortListResponse, error)
	UnexposePort(ctx context.Context, req api.PortRequest) (api.PortInfo, error)
}

// registerPorts adds sandbox::port::*, when the table has Ports.
func registerPorts(t *Table) {
	p := t.deps.Ports
	if p == nil {
		return
	}
	add(t, api.FnPortExpose, "Make a port of a sandbox reachable through hutch's listener (its preview URL): with your token, or public through a URL with a token of its own that may expire", p.ExposePort)
	add(t, api.FnPortList, "List a sandbox's exposed ports and their preview URLs", p.ListPorts)
	add(t, api.FnPortUnexpose, "Make an exposed port unreachable again", p.UnexposePort)
}
