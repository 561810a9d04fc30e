package functions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// fakeSandboxes records the requests it gets; only what the table does with
// them is under test here.
type fakeSandboxes struct {
	create api.CreateRequest
	exec   api.ExecResponse
}

func (f *fakeSandboxes) Create(_ context.Context, r api.CreateRequest) (api.CreateResponse, error) {
	f.create = r
	return api.CreateResponse{SandboxID: "id", Image: r.Image}, nil
}
func (f *fakeSandboxes) Exec(context.Context, api.ExecRequest) (api.ExecResponse, error) {
	return f.exec, nil
}
func (f *fakeSandboxes) Stop(_ context.Context, r api.StopRequest) (api.StopResponse, error) {
	return api.StopResponse{SandboxID: r.SandboxID, Stopped: true}, nil
}
func (f *fakeSandboxes) List(context.Context, api.ListRequest) (api.ListResponse, error) {
	return api.ListResponse{}, nil
}
func (f *fakeSandboxes) Get(_ context.Context, r api.GetRequest) (api.SandboxInfo, error) {
	return api.SandboxInfo{SandboxID: r.SandboxID}, nil
}
func (f *fakeSandboxes) Pause(_ context.Context, r api.PauseRequest) (api.StateResponse, error) {
	return api.StateResponse{SandboxID: r.SandboxID, State: "paused", Changed: true}, nil
}
func (f *fakeSandboxes) Resume(_ context.Context, r api.ResumeRequest) (api.StateResponse, error) {
	return api.StateResponse{SandboxID: r.SandboxID, State: "running", Changed: true}, nil
}
func (f *fakeSandboxes) SetTimeout(_ context.Context, r api.SetTimeoutRequest) (api.SetTimeoutResponse, error) {
	return api.SetTimeoutResponse{SandboxID: r.SandboxID}, nil
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ payload, want string }{
		{`{"image": 3}`, `field "image" must be string, not number`},
		{`{"image": "python", "bogus": 1}`, `unknown field "bogus"`},
		{`{"image": "python"`, "truncated JSON"},
		{`{"image": "python"} {}`, "unexpected data after the JSON object"},
		{`[1]`, "must be a JSON object"},
		{`{"cpus": -1}`, `field "cpus" must be uint32`},
		{`{"env": 5}`, "env must be a list"},
		{`{nope}`, "invalid JSON"},
	}
	for _, tt := range tests {
		var req api.CreateRequest
		err := Decode(json.RawMessage(tt.payload), &req)
		if !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s) = %v, want S001 containing %q", tt.payload, err, tt.want)
		}
	}
}

func TestEnvBothShapes(t *testing.T) {
	f := &fakeSandboxes{}
	tab := New(Deps{Sandboxes: f})
	for _, payload := range []string{
		`{"image":"python","env":["B=2","A=1"]}`,
		`{"image":"python","env":{"B":"2","A":"1"}}`,
	} {
		if _, err := tab.Call(context.Background(), api.FnCreate, json.RawMessage(payload), Params{}); err != nil {
			t.Fatal(err)
		}
		if len(f.create.Env) != 2 {
			t.Fatalf("env from %s = %q", payload, f.create.Env)
		}
	}
	if f.create.Env[0] != "A=1" {
		t.Errorf("object env not sorted by key: %q", f.create.Env)
	}
}

func TestExecTimeoutIsS200OnlyThroughTheContract(t *testing.T) {
	f := &fakeSandboxes{exec: api.ExecResponse{Stdout: "partial", TimedOut: true, TimeoutMs: 500}}
	tab := New(Deps{Sandboxes: f})
	_, err := tab.Call(context.Background(), api.FnExec, json.RawMessage(`{"sandbox_id":"x","cmd":"sleep","timeout_ms":500}`), Params{})
	if !errdefs.Is(err, errdefs.CodeExecTimeout) || !strings.Contains(err.Error(), "exec timed out after 500ms") {
		t.Fatalf("contract exec err = %v, want S200", err)
	}
	res, err := tab.Call(context.Background(), api.FnExecResult, json.RawMessage(`{"cmd":"sleep"}`), Params{SandboxID: "x"})
	resp, _ := res.(api.ExecResponse)
	if err != nil || !resp.TimedOut || resp.Stdout != "partial" {
		t.Fatalf("REST exec = %+v, %v; want timed_out with partial output", resp, err)
	}
}

func TestUnknownFunction(t *testing.T) {
	_, err := New(Deps{Sandboxes: &fakeSandboxes{}}).Call(context.Background(), "sandbox::nope", nil, Params{})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// TestCallIsTyped: Call answers a function's result as its type; a result
// of another type is an internal error (never a panic), an unknown id
// ErrNotFound, a request of another type an internal error.
func TestCallIsTyped(t *testing.T) {
	tab := New(Deps{Sandboxes: &fakeSandboxes{}})
	ctx := context.Background()
	if res, err := Call[api.CreateResponse](ctx, tab, api.FnCreate, api.CreateRequest{Image: "python"}); err != nil || res.Image != "python" {
		t.Fatalf("create: %+v, %v", res, err)
	}
	if _, err := Call[api.ListResponse](ctx, tab, api.FnCreate, api.CreateRequest{Image: "python"}); !errdefs.Is(err, errdefs.CodeInternal) {
		t.Errorf("a result of another type: %v, want internal", err)
	}
	if _, err := Call[api.ListResponse](ctx, tab, api.FnList, api.StopRequest{}); !errdefs.Is(err, errdefs.CodeInternal) {
		t.Errorf("a request of another type: %v, want internal", err)
	}
	if _, err := Call[api.ListResponse](ctx, tab, "no::such", api.ListRequest{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown id: %v, want ErrNotFound", err)
	}
}

// TestLifecycleOnSandboxes: sandbox::pause, sandbox::resume and
// sandbox::set_timeout are the core's state moves: a table over Sandboxes
// alone has them, and they reach its methods with the payload's fields.
func TestLifecycleOnSandboxes(t *testing.T) {
	tab := New(Deps{Sandboxes: &fakeSandboxes{}})
	ctx := context.Background()
	if res, err := Call[api.StateResponse](ctx, tab, api.FnPause, api.PauseRequest{SandboxID: "a"}); err != nil || res.SandboxID != "a" || res.State != "paused" {
		t.Errorf("pause: %+v, %v", res, err)
	}
	if res, err := Call[api.StateResponse](ctx, tab, api.FnResume, api.ResumeRequest{SandboxID: "b"}); err != nil || res.SandboxID != "b" || res.State != "running" {
		t.Errorf("resume: %+v, %v", res, err)
	}
	if res, err := Call[api.SetTimeoutResponse](ctx, tab, api.FnSetTimeout, api.SetTimeoutRequest{SandboxID: "c", TimeoutSecs: 5}); err != nil || res.SandboxID != "c" {
		t.Errorf("set_timeout: %+v, %v", res, err)
	}
}
