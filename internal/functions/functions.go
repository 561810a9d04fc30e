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
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Sandboxes is what the table dispatches to: the sandbox manager.
type Sandboxes interface {
	Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error)
	Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error)
	Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error)
	List(ctx context.Context, req api.ListRequest) (api.ListResponse, error)
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
	ImageStatus(ctx context.Context, req api.ImageStatusRequest) (api.ImageStatus, error)
}

// Handler runs one function on a JSON payload.
type Handler func(ctx context.Context, payload json.RawMessage) (any, error)

// Function is one entry of the table.
type Function struct {
	ID          string
	Description string
	Handler     Handler
}

// ErrNotFound is returned by Call for an id the table does not have.
var ErrNotFound = errors.New("function not found")

// Table maps function ids to handlers.
type Table struct {
	sb  Sandboxes
	fns map[string]Function
	obs Observer // see Observe; nil reports nothing
}

// New builds the table over a sandbox manager.
func New(sb Sandboxes) *Table {
	t := &Table{sb: sb, fns: map[string]Function{}}
	add(t, "sandbox::run", "Run code in a new sandbox and stop it (create, write files, exec)", t.run)
	add(t, "sandbox::create", "Create a sandbox from a catalog image", sb.Create)
	add(t, "sandbox::exec", "Execute a command inside a live sandbox", t.execStrict)
	add(t, "sandbox::stop", "Stop and remove a sandbox", sb.Stop)
	add(t, "sandbox::list", "List sandboxes", sb.List)
	add(t, "sandbox::get", "Describe one sandbox (hutch extension)", sb.Get)
	add(t, "hutch::image::status", "Cache state of a catalog image (hutch extension)", sb.ImageStatus)
	addImages(t, sb)
	registerFS(t)
	addMetrics(t, sb)
	return t
}

// add registers a typed function under id.
func add[Req, Resp any](t *Table, id, desc string, fn func(context.Context, Req) (Resp, error)) {
	t.fns[id] = Function{ID: id, Description: desc, Handler: func(ctx context.Context, payload json.RawMessage) (any, error) {
		var req Req
		if err := Decode(payload, &req); err != nil {
			t.observe(id, err)
			return nil, err
		}
		resp, err := fn(ctx, req)
		t.observe(id, err)
		return resp, err
	}}
}

// Call runs the function id on payload. An unknown id returns ErrNotFound.
func (t *Table) Call(ctx context.Context, id string, payload json.RawMessage) (any, error) {
	f, ok := t.fns[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return f.Handler(ctx, payload)
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

// Exec runs sandbox::exec the REST way: a timeout is a normal result with
// timed_out set and the output captured so far.
func (t *Table) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	resp, err := t.sb.Exec(ctx, req)
	t.observe("sandbox::exec", err)
	return resp, err
}

// execStrict runs sandbox::exec the contract's way: a timeout is S200.
func (t *Table) execStrict(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	resp, err := t.sb.Exec(ctx, req)
	if err == nil && resp.TimedOut {
		return resp, errdefs.New(errdefs.CodeExecTimeout, "exec timed out after %dms", resp.TimeoutMs).
			WithFix(map[string]any{"timeout_ms": resp.TimeoutMs * 2}, "raise timeout_ms or split the work")
	}
	return resp, err
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
