// Package functionstest is a fake of the function table's dependencies
// (functions.Deps): a fake sandbox manager whose behaviour each test sets,
// and the REST API served over a table of it, for unit tests of the
// transports and clients that sit on top of the table (the HTTP handler,
// the engine, E2B, the Go client, the CLI). The fake stands in for the
// manager because a real one needs root and runsc; integration tests use
// the real daemon instead.
package functionstest

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// DefaultID is the sandbox id the fake's default Create returns.
const DefaultID = "5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a00"

// Call is one recorded call of the fake.
type Call struct {
	Method string // "Create", "Exec", "Stop", "List", "Get", "ImageStatus", "Catalog", "ImagePull", ...
	Req    any    // the typed request
}

// Fake is a functions.Sandboxes whose behaviour each test sets through the
// ...Func fields; a nil field gets a plain default answer. It records every
// call. Safe for concurrent use.
type Fake struct {
	CreateFunc      func(context.Context, api.CreateRequest) (api.CreateResponse, error)
	ExecFunc        func(context.Context, api.ExecRequest) (api.ExecResponse, error)
	StopFunc        func(context.Context, api.StopRequest) (api.StopResponse, error)
	ListFunc        func(context.Context, api.ListRequest) (api.ListResponse, error)
	GetFunc         func(context.Context, api.GetRequest) (api.SandboxInfo, error)
	ImageStatusFunc func(context.Context, api.ImageStatusRequest) (api.ImageStatus, error)
	// ProcessFunc answers the process methods (StartProcess, GetProcess,
	// ...; method is the name, req the typed request, the answer must be
	// the method's result type); nil answers S230.
	ProcessFunc func(ctx context.Context, method string, req any) (any, error)
	// StateFunc answers Pause, Resume, SetTimeout, the snapshot methods
	// and Fork in the same way; nil answers S002.
	StateFunc func(ctx context.Context, method string, req any) (any, error)

	// mu guards calls.
	mu    sync.Mutex
	calls []Call
}

var _ functions.Sandboxes = (*Fake)(nil)

func (f *Fake) record(method string, req any) {
	f.mu.Lock()
	f.calls = append(f.calls, Call{Method: method, Req: req})
	f.mu.Unlock()
}

// Calls returns the calls so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CallsOf returns the calls of method so far, in order: a test that
// looks for one call must not depend on when the CLI's progress polls ran.
func (f *Fake) CallsOf(method string) []Call {
	var out []Call
	for _, c := range f.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Methods returns the method names of the calls so far, in order,
// leaving out ImageStatus polls.
func (f *Fake) Methods() []string {
	var out []string
	for _, c := range f.Calls() {
		if c.Method != "ImageStatus" {
			out = append(out, c.Method)
		}
	}
	return out
}

// Create returns DefaultID by default.
func (f *Fake) Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	f.record("Create", req)
	if f.CreateFunc != nil {
		return f.CreateFunc(ctx, req)
	}
	if req.Image == "" {
		return api.CreateResponse{}, errdefs.Malformed("image is required")
	}
	return api.CreateResponse{SandboxID: DefaultID, Image: req.Image}, nil
}

// Exec echoes the command line on stdout and exits 0 by default.
func (f *Fake) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	f.record("Exec", req)
	if f.ExecFunc != nil {
		return f.ExecFunc(ctx, req)
	}
	argv := req.Argv
	if len(argv) == 0 {
		argv = append([]string{req.Cmd}, req.Args...)
	}
	zero := 0
	return api.ExecResponse{Stdout: strings.Join(argv, " ") + "\n", ExitCode: &zero, Success: true}, nil
}

// Stop reports the sandbox stopped by default.
func (f *Fake) Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error) {
	f.record("Stop", req)
	if f.StopFunc != nil {
		return f.StopFunc(ctx, req)
	}
	return api.StopResponse{SandboxID: req.SandboxID, Stopped: true}, nil
}

// List returns no sandboxes by default.
func (f *Fake) List(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	f.record("List", req)
	if f.ListFunc != nil {
		return f.ListFunc(ctx, req)
	}
	return api.ListResponse{Sandboxes: []api.SandboxInfo{}}, nil
}

// Get answers S002 by default.
func (f *Fake) Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	f.record("Get", req)
	if f.GetFunc != nil {
		return f.GetFunc(ctx, req)
	}
	return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "no live sandbox with id %s", req.SandboxID)
}

// ImageStatus reports the image ready by default.
func (f *Fake) ImageStatus(ctx context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
	f.record("ImageStatus", req)
	if f.ImageStatusFunc != nil {
		return f.ImageStatusFunc(ctx, req)
	}
	return api.ImageStatus{Name: req.Name, State: "ready"}, nil
}

// NewServer serves the REST API over fake until the test ends.
func NewServer(t testing.TB, fake *Fake, opts httpapi.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(functions.New(DepsOf(fake)), opts))
	t.Cleanup(srv.Close)
	return srv
}

// DepsOf are the table's dependencies over a test's fake sb: sb itself for
// each interface it implements. (The daemon names each dependency; a test
// fake that wraps Fake to change one method must not lose the change.)
func DepsOf(sb functions.Sandboxes) functions.Deps {
	d := functions.Deps{Sandboxes: sb}
	d.Files, _ = sb.(functions.FS)
	d.Images, _ = sb.(functions.Images)
	d.Metrics, _ = sb.(functions.SandboxMetrics)
	d.Processes, _ = sb.(functions.Processes)
	d.Snapshots, _ = sb.(functions.Snapshots)
	d.Ports, _ = sb.(functions.Ports)
	return d
}
