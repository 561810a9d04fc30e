// Package functions is hutch's one function table: every operation, keyed by
// its contract id ("sandbox::create", "sandbox::exec", ...), with a typed
// request and response. REST routes, the generic function endpoint, the
// engine WebSocket, the CLI and MCP all dispatch into it; none of them holds
// business logic of its own.
package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Sandboxes is what the table dispatches to: the sandbox manager, the
// core's lifecycle (create, stop, list, and the state moves of pause,
// resume and set_timeout: state.go).
type Sandboxes interface {
	Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error)
	Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error)
	Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error)
	List(ctx context.Context, req api.ListRequest) (api.ListResponse, error)
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
	Pause(ctx context.Context, req api.PauseRequest) (api.StateResponse, error)
	Resume(ctx context.Context, req api.ResumeRequest) (api.StateResponse, error)
	SetTimeout(ctx context.Context, req api.SetTimeoutRequest) (api.SetTimeoutResponse, error)
}

// Deps are what the table dispatches to, each slot filled by its own
// service in the daemon. Sandboxes is required; a nil optional field
// leaves its functions out of the table (sandbox::fs::* and sandbox::metrics,
// the image functions, the process ones, ...), except the streamed
// transfers, which answer S219 without Files.
type Deps struct {
	Sandboxes Sandboxes
	Files     FS
	Images    Images
	Metrics   SandboxMetrics
	Processes Processes
	Snapshots Snapshots
	Events    Events
	Webhooks  Webhooks
	Alerts    Alerts
	Jobs      Jobs
	// Interpreter runs code contexts.
	Interpreter Interpreter
	Ports       Ports
	Networks    Networks
	Environment Environment
	Volumes     Volumes
	Git         Git
	// Observer, when set, is told the outcome of every call.
	Observer Observer
	// issue 38: Quota, when set, admits every call (quota.go).
	Quota Quota
	// issue 37: owners' secrets and the egress proxy's decisions.
	Secrets   Secrets
	EgressLog EgressLog
	// issue 36: Cluster, when set, makes sandbox::create's sandboxes and
	// lists sandbox::list's (cluster mode: Pods on any node, cluster.go).
	Cluster Cluster
}

// Handler runs one function on a JSON payload, with the fields a
// transport took from elsewhere (p). A streaming function returns a
// *Stream, which the caller must Close.
type Handler func(ctx context.Context, payload json.RawMessage, p Params) (any, error)

// Function is one entry of the table.
type Function struct {
	ID          string
	Description string
	// Streams says the function returns a *Stream rather than a value,
	// always or when its request asks (sandbox::process::output's follow).
	Streams bool
	// Request and Response are the Go types of its request and of its
	// result (a stream's final value), which its schemas describe.
	Request, Response reflect.Type
	// TakesBody says its request's content may come as a stream
	// (Params.Body); GivesBody that its result may give its bytes as one
	// (Params.StreamBody).
	TakesBody, GivesBody bool
	// Tool offers it to agents as an MCP tool (tools.go), or is nil.
	Tool    *api.Tool
	Handler Handler
	// typed runs the function on an already typed request (Invoke).
	typed func(ctx context.Context, req any) (any, error)
}

// ErrNotFound is returned by Call for an id the table does not have.
var ErrNotFound = errors.New("function not found")

// Table maps function ids to handlers.
type Table struct {
	deps Deps
	fns  map[string]Function
}

// New builds the table over deps.
func New(deps Deps) *Table {
	t := &Table{deps: deps, fns: map[string]Function{}}
	sb := deps.Sandboxes
	add(t, api.FnRun, "Run code in a new sandbox and stop it (create, write files, exec)", t.run)
	add(t, api.FnCreate, "Create a sandbox from a catalog image", t.create) // issue 37: with its preview terms (preview.go)
	registerExec(t)
	add(t, api.FnStop, "Stop and remove a sandbox", sb.Stop)
	add(t, api.FnList, "List sandboxes", t.list)                       // issue 36: over the cluster in cluster mode; issue 37: with their preview terms
	add(t, api.FnGet, "Describe one sandbox (hutch extension)", t.get) // issue 37: with its preview terms (preview.go)
	registerImages(t)
	registerFS(t)
	registerArchives(t)
	registerMetrics(t)
	registerProcesses(t)
	registerLifecycle(t)
	registerSnapshots(t)
	registerEvents(t)
	registerWebhooks(t)
	registerAlerts(t)
	registerJobs(t)
	registerInterpreter(t)
	registerPorts(t)
	registerNetworks(t)
	registerEnv(t)
	registerVolumes(t)
	registerGit(t)
	registerSecrets(t) // issue 37
	registerDescribe(t)
	registerQuota(t) // issue 38
	// issue 39: sandbox::template::build
	registerTemplateBuild(t)
	return t
}

// Call runs the function id on payload, with the fields p set on the
// decoded request. An unknown id returns ErrNotFound.
func (t *Table) Call(ctx context.Context, id string, payload json.RawMessage, p Params) (any, error) {
	f, ok := t.fns[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return f.Handler(ctx, payload, p)
}

// Invoke runs the function id on a typed request, for a transport that
// builds the request itself (a streamed transfer's URL). The request must
// be of the function's type; an unknown id returns ErrNotFound.
func Invoke[Req any](ctx context.Context, t *Table, id string, req Req) (any, error) {
	f, ok := t.fns[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return f.typed(ctx, req)
}

// Call runs function id on a typed request, as Invoke, and returns its
// result as a Resp (a *Stream for a streaming function): the typed call of
// a transport that builds requests itself. A result of another type is an
// internal error.
func Call[Resp any](ctx context.Context, t *Table, id string, req any) (Resp, error) {
	var zero Resp
	res, err := Invoke(ctx, t, id, req)
	if err != nil {
		return zero, err
	}
	out, ok := res.(Resp)
	if !ok {
		return zero, errdefs.New(errdefs.CodeInternal, "%s answered a %T, not a %T", id, res, zero)
	}
	return out, nil
}

// Lookup returns the entry of id.
func (t *Table) Lookup(id string) (Function, bool) {
	f, ok := t.fns[id]
	return f, ok
}

// Functions lists the table's entries sorted by id.
func (t *Table) Functions() []Function {
	out := make([]Function, 0, len(t.fns))
	for _, f := range t.fns {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Decode strictly decodes a JSON payload into v: unknown fields, trailing
// data and type mismatches are S001 errors that name the problem. An empty
// payload decodes as {}.
func Decode(payload json.RawMessage, v any) error {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		payload = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errdefs.Malformed("malformed request: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errdefs.Malformed("malformed request: unexpected data after the JSON object")
	}
	return nil
}

// describeJSONError turns encoding/json errors into caller-facing text.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return fmt.Sprintf("the payload must be a JSON object, not %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
