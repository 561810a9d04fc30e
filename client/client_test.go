package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

const id = functionstest.DefaultID

func TestMethods(t *testing.T) {
	fake := &functionstest.Fake{
		GetFunc: func(_ context.Context, req api.GetRequest) (api.SandboxInfo, error) {
			return api.SandboxInfo{SandboxID: req.SandboxID, Image: "python"}, nil
		},
		ImageStatusFunc: func(_ context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
			return api.ImageStatus{Name: req.Name, State: "building", ElapsedSecs: 3}, nil
		},
	}
	srv := functionstest.NewServer(t, fake, httpapi.Options{})
	c := client.New(srv.URL+"/", "")
	ctx := context.Background()

	tests := []struct {
		name     string
		call     func() (any, error)
		want     any
		wantCall functionstest.Call
	}{
		{
			name:     "create",
			call:     func() (any, error) { return c.Create(ctx, api.CreateRequest{Image: "python", Env: api.Env{"A=1"}}) },
			want:     api.CreateResponse{SandboxID: id, Image: "python"},
			wantCall: functionstest.Call{Method: "Create", Req: api.CreateRequest{Image: "python", Env: api.Env{"A=1"}}},
		},
		{
			name: "exec",
			call: func() (any, error) {
				return c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"echo", "hi"}})
			},
			want:     api.ExecResponse{Stdout: "echo hi\n", ExitCode: new(int), Success: true},
			wantCall: functionstest.Call{Method: "Exec", Req: api.ExecRequest{SandboxID: id, Argv: []string{"echo", "hi"}}},
		},
		{
			name:     "stop",
			call:     func() (any, error) { return c.Stop(ctx, id, false) },
			want:     api.StopResponse{SandboxID: id, Stopped: true},
			wantCall: functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id}},
		},
		{
			name:     "stop wait",
			call:     func() (any, error) { return c.Stop(ctx, id, true) },
			want:     api.StopResponse{SandboxID: id, Stopped: true},
			wantCall: functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id, Wait: true}},
		},
		{
			name:     "list",
			call:     func() (any, error) { return c.List(ctx) },
			want:     api.ListResponse{Sandboxes: []api.SandboxInfo{}},
			wantCall: functionstest.Call{Method: "List", Req: api.ListRequest{}},
		},
		{
			name:     "get",
			call:     func() (any, error) { return c.Get(ctx, id) },
			want:     api.SandboxInfo{SandboxID: id, Image: "python"},
			wantCall: functionstest.Call{Method: "Get", Req: api.GetRequest{SandboxID: id}},
		},
		{
			name:     "image status of an OCI ref",
			call:     func() (any, error) { return c.ImageStatus(ctx, "ghcr.io/acme/tool:1") },
			want:     api.ImageStatus{Name: "ghcr.io/acme/tool:1", State: "building", ElapsedSecs: 3},
			wantCall: functionstest.Call{Method: "ImageStatus", Req: api.ImageStatusRequest{Name: "ghcr.io/acme/tool:1"}},
		},
		{
			name: "call",
			call: func() (any, error) {
				var out api.CreateResponse
				err := c.Call(ctx, api.FnCreate, map[string]any{"image": "node"}, &out)
				return out, err
			},
			want:     api.CreateResponse{SandboxID: id, Image: "node"},
			wantCall: functionstest.Call{Method: "Create", Req: api.CreateRequest{Image: "node"}},
		},
		{
			name: "call with raw payload",
			call: func() (any, error) {
				var out api.StopResponse
				err := c.Call(ctx, api.FnStop, json.RawMessage(`{"sandbox_id":"`+id+`"}`), &out)
				return out, err
			},
			want:     api.StopResponse{SandboxID: id, Stopped: true},
			wantCall: functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(fake.Calls())
			got, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			calls := fake.Calls()[before:]
			if len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.wantCall) {
				t.Errorf("calls %+v, want [%+v]", calls, tt.wantCall)
			}
		})
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("Health: %v", err)
	}
}

func TestRuntimes(t *testing.T) {
	want := []api.RuntimeInfo{{Name: "gvisor", Mode: "systrap", Abilities: "pause", Available: true, Default: true},
		{Name: "microvm", Abilities: "none", Unavailable: "qemu-system-x86_64 not found"}}
	srv := functionstest.NewServer(t, &functionstest.Fake{}, httpapi.Options{Runtimes: want})
	got, err := client.New(srv.URL, "").Runtimes(context.Background())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Runtimes = %+v, %v; want %+v", got, err, want)
	}
}

func TestErrors(t *testing.T) {
	fake := &functionstest.Fake{
		CreateFunc: func(context.Context, api.CreateRequest) (api.CreateResponse, error) {
			return api.CreateResponse{}, errdefs.New(errdefs.CodeImageNotAllowed, `image "ruby" is not allowed`).
				WithFix(map[string]any{"image": "python"}, "use a preset")
		},
	}
	srv := functionstest.NewServer(t, fake, httpapi.Options{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	ctx := context.Background()

	tests := []struct {
		name        string
		call        func() error
		wantCode    string // envelope code; "" means no envelope
		unreachable bool
		wantText    string
	}{
		{
			name: "envelope",
			call: func() error {
				_, err := client.New(srv.URL, "").Create(ctx, api.CreateRequest{Image: "ruby"})
				return err
			},
			wantCode: "S100",
			wantText: `S100: image "ruby" is not allowed`,
		},
		{
			name:     "unknown function",
			call:     func() error { return client.New(srv.URL, "").Call(ctx, "nope::x", nil, nil) },
			wantCode: "function_not_found",
		},
		{
			name:     "not JSON",
			call:     func() error { _, err := client.New(proxy.URL, "").List(ctx); return err },
			wantText: "502 Bad Gateway",
		},
		{
			name:        "unreachable",
			call:        func() error { _, err := client.New(closedURL(t), "").List(ctx); return err },
			unreachable: true,
			wantText:    "no daemon at http://127.0.0.1:",
		},
		{
			name:     "empty id",
			call:     func() error { _, err := client.New(srv.URL, "").Stop(ctx, "", false); return err },
			wantText: "sandbox id is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("no error")
			}
			var env *api.ErrorEnvelope
			gotEnv := errors.As(err, &env)
			if gotEnv != (tt.wantCode != "") || (gotEnv && env.Code != tt.wantCode) {
				t.Errorf("err %v (%T): envelope %v, want code %q", err, err, gotEnv, tt.wantCode)
			}
			if client.IsUnreachable(err) != tt.unreachable {
				t.Errorf("IsUnreachable(%v) = %v, want %v", err, !tt.unreachable, tt.unreachable)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err %q lacks %q", err, tt.wantText)
			}
		})
	}
}

func TestCancelledIsNotUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := client.New(closedURL(t), "").List(ctx)
	if err == nil || client.IsUnreachable(err) {
		t.Errorf("cancelled call: err %v, IsUnreachable %v; want an error that is not unreachable", err, client.IsUnreachable(err))
	}
}

func TestTokenAndEnv(t *testing.T) {
	fake := &functionstest.Fake{}
	const tok = "tok-0123456789abcdef"
	tokens, err := auth.New(map[string]string{"alice": tok})
	if err != nil {
		t.Fatal(err)
	}
	srv := functionstest.NewServer(t, fake, httpapi.Options{Auth: tokens})
	ctx := context.Background()

	t.Setenv("HUTCH_URL", srv.URL)
	t.Setenv("HUTCH_TOKEN", tok)
	c := client.FromEnv()
	if c.URL() != srv.URL {
		t.Errorf("URL %q, want %q", c.URL(), srv.URL)
	}
	if _, err := c.List(ctx); err != nil {
		t.Errorf("with token: %v", err)
	}
	var env *api.ErrorEnvelope
	if _, err := client.New(srv.URL, "").List(ctx); !errors.As(err, &env) || env.Code != "unauthorized" {
		t.Errorf("without token: %v, want unauthorized", err)
	}

	for _, tt := range []struct{ env, want string }{
		{"", client.DefaultURL},
		{"127.0.0.1:4000", "http://127.0.0.1:4000"},
		{"http://[::1]:4000/", "http://[::1]:4000"},
	} {
		t.Setenv("HUTCH_URL", tt.env)
		if got := client.FromEnv().URL(); got != tt.want {
			t.Errorf("HUTCH_URL=%q: URL %q, want %q", tt.env, got, tt.want)
		}
	}
}

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
