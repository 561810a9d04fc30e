package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

const id = functionstest.DefaultID

// newRequest is httptest.NewRequest to the daemon's default loopback
// address, a Host the web guard lets through.
func newRequest(method, path string, body io.Reader) *http.Request {
	return httptest.NewRequest(method, "http://127.0.0.1:3111"+path, body)
}

// do sends one request to a handler over fake and returns status, the
// decoded JSON body and the raw body. hdr["Host"] sets the request's Host.
func do(t *testing.T, h http.Handler, method, path, body string, hdr map[string]string) (int, map[string]any, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := newRequest(method, path, rd)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if host, ok := hdr["Host"]; ok {
		req.Host = host
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw := rec.Body.String()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v: %q", method, path, err, raw)
	}
	return rec.Code, m, raw
}

type routeTest struct {
	name         string
	method, path string
	body         string
	setup        func(f *functionstest.Fake)
	wantStatus   int
	wantBody     map[string]any // fields of the result (or envelope) with these values
	wantCall     *functionstest.Call
}

func TestRoutes(t *testing.T) {
	info := api.SandboxInfo{SandboxID: id, Image: "python", AgeSecs: 3}
	tests := []routeTest{
		{
			name: "create", method: "POST", path: "/v1/sandboxes",
			body:       `{"image":"python","cpus":2,"env":{"A":"1"}}`,
			wantStatus: 200,
			wantBody:   map[string]any{"sandbox_id": id, "image": "python"},
			wantCall:   &functionstest.Call{Method: "Create", Req: api.CreateRequest{Image: "python", CPUs: 2, Env: api.Env{"A=1"}}},
		},
		{
			name: "list", method: "GET", path: "/v1/sandboxes",
			setup: func(f *functionstest.Fake) {
				f.ListFunc = func(context.Context, api.ListRequest) (api.ListResponse, error) {
					return api.ListResponse{Sandboxes: []api.SandboxInfo{info}}, nil
				}
			},
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "List", Req: api.ListRequest{}},
		},
		{
			name: "list filter from the query", method: "GET",
			path:       "/v1/sandboxes?state=paused,running&metadata=team%3Dred%26run%3D1&metadata=tier=gold&limit=2&next_token=abc",
			wantStatus: 200,
			wantCall: &functionstest.Call{Method: "List", Req: api.ListRequest{State: []string{"paused", "running"},
				Metadata: map[string]string{"team": "red", "run": "1", "tier": "gold"}, Limit: 2, NextToken: "abc"}},
		},
		{
			name: "list bad limit", method: "GET", path: "/v1/sandboxes?limit=many",
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "pause", method: "POST", path: "/v1/sandboxes/" + id + "/pause",
			body: `{"depth":"freeze"}`,
			setup: func(f *functionstest.Fake) {
				f.StateFunc = func(_ context.Context, _ string, req any) (any, error) {
					return api.StateResponse{SandboxID: id, State: "paused", Changed: true}, nil
				}
			},
			wantStatus: 200,
			wantBody:   map[string]any{"state": "paused", "changed": true},
			wantCall:   &functionstest.Call{Method: "Pause", Req: api.PauseRequest{SandboxID: id, Depth: "freeze"}},
		},
		{
			name: "resume", method: "POST", path: "/v1/sandboxes/" + id + "/resume",
			setup: func(f *functionstest.Fake) {
				f.StateFunc = func(context.Context, string, any) (any, error) {
					return api.StateResponse{SandboxID: id, State: "running", Changed: true}, nil
				}
			},
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "Resume", Req: api.ResumeRequest{SandboxID: id}},
		},
		{
			name: "resume paused is 409 S005", method: "POST", path: "/v1/sandboxes/" + id + "/resume",
			setup: func(f *functionstest.Fake) {
				f.StateFunc = func(context.Context, string, any) (any, error) {
					return nil, errdefs.New(errdefs.CodePaused, "sandbox is pausing")
				}
			},
			wantStatus: 409,
			wantBody:   map[string]any{"code": "S005"},
		},
		{
			name: "set timeout", method: "POST", path: "/v1/sandboxes/" + id + "/timeout",
			body: `{"timeout_secs":60}`,
			setup: func(f *functionstest.Fake) {
				f.StateFunc = func(context.Context, string, any) (any, error) {
					return api.SetTimeoutResponse{SandboxID: id, ExpiresAt: "2026-11-25T22:00:00Z"}, nil
				}
			},
			wantStatus: 200,
			wantBody:   map[string]any{"expires_at": "2026-11-25T22:00:00Z"},
			wantCall:   &functionstest.Call{Method: "SetTimeout", Req: api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: 60}},
		},
		{
			name: "get", method: "GET", path: "/v1/sandboxes/" + id,
			setup: func(f *functionstest.Fake) {
				f.GetFunc = func(context.Context, api.GetRequest) (api.SandboxInfo, error) { return info, nil }
			},
			wantStatus: 200,
			wantBody:   map[string]any{"sandbox_id": id, "image": "python"},
			wantCall:   &functionstest.Call{Method: "Get", Req: api.GetRequest{SandboxID: id}},
		},
		{
			name: "get not found is 404 S002", method: "GET", path: "/v1/sandboxes/" + id,
			wantStatus: 404,
			wantBody:   map[string]any{"code": "S002", "type": "validation"},
		},
		{
			name: "stop", method: "DELETE", path: "/v1/sandboxes/" + id,
			wantStatus: 200,
			wantBody:   map[string]any{"sandbox_id": id, "stopped": true},
			wantCall:   &functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id}},
		},
		{
			name: "stop wait", method: "DELETE", path: "/v1/sandboxes/" + id + "?wait=true",
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id, Wait: true}},
		},
		{
			name: "stop bare wait", method: "DELETE", path: "/v1/sandboxes/" + id + "?wait",
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id, Wait: true}},
		},
		{
			name: "stop body merged with path", method: "DELETE", path: "/v1/sandboxes/" + id,
			body:       `{"wait":true}`,
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "Stop", Req: api.StopRequest{SandboxID: id, Wait: true}},
		},
		{
			name: "stop bad wait", method: "DELETE", path: "/v1/sandboxes/" + id + "?wait=maybe",
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "stop wait conflicts with body", method: "DELETE", path: "/v1/sandboxes/" + id + "?wait=true",
			body:       `{"wait":false}`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "exec", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body:       `{"cmd":"echo","args":["hi"]}`,
			wantStatus: 200,
			wantBody:   map[string]any{"stdout": "echo hi\n", "exit_code": 0.0, "success": true},
			wantCall:   &functionstest.Call{Method: "Exec", Req: api.ExecRequest{SandboxID: id, Cmd: "echo", Args: []string{"hi"}}},
		},
		{
			name: "exec with the same sandbox_id in the body", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body:       `{"sandbox_id":"` + id + `","cmd":"true"}`,
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "Exec", Req: api.ExecRequest{SandboxID: id, Cmd: "true"}},
		},
		{
			name: "exec with a conflicting sandbox_id", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body:       `{"sandbox_id":"other","cmd":"true"}`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "exec timeout is a result over REST", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body: `{"cmd":"sleep","args":["9"],"timeout_ms":10}`,
			setup: func(f *functionstest.Fake) {
				f.ExecFunc = func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
					return api.ExecResponse{Stdout: "partial", TimedOut: true}, nil
				}
			},
			wantStatus: 200,
			wantBody:   map[string]any{"timed_out": true, "stdout": "partial", "exit_code": nil},
		},
		{
			name: "exec timeout is S200 through the function route", method: "POST", path: "/v1/functions/sandbox::exec",
			body: `{"sandbox_id":"` + id + `","cmd":"sleep","timeout_ms":10}`,
			setup: func(f *functionstest.Fake) {
				f.ExecFunc = func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
					return api.ExecResponse{TimedOut: true}, nil
				}
			},
			wantStatus: 504,
			wantBody:   map[string]any{"code": "S200", "type": "execution"},
		},
		{
			name: "exec malformed JSON", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body:       `{"cmd":`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001", "message": "malformed request: truncated JSON"},
		},
		{
			name: "exec unknown field", method: "POST", path: "/v1/sandboxes/" + id + "/exec",
			body:       `{"command":"ls"}`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "create wrong type", method: "POST", path: "/v1/sandboxes",
			body:       `{"image":"python","cpus":"two"}`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "get with an array body", method: "GET", path: "/v1/sandboxes/" + id,
			body:       `[1]`,
			wantStatus: 400,
			wantBody:   map[string]any{"code": "S001"},
		},
		{
			name: "function route", method: "POST", path: "/v1/functions/sandbox::create",
			body:       `{"image":"node"}`,
			wantStatus: 200,
			wantBody:   map[string]any{"sandbox_id": id, "image": "node"},
			wantCall:   &functionstest.Call{Method: "Create", Req: api.CreateRequest{Image: "node"}},
		},
		{
			name: "unknown function", method: "POST", path: "/v1/functions/sandbox::nope",
			wantStatus: 404,
			wantBody:   map[string]any{"code": "function_not_found"},
		},
		{
			name: "image status", method: "GET", path: "/v1/images/python",
			wantStatus: 200,
			wantBody:   map[string]any{"name": "python", "state": "ready"},
			wantCall:   &functionstest.Call{Method: "ImageStatus", Req: api.ImageStatusRequest{Name: "python"}},
		},
		{
			name: "image status of an OCI ref", method: "GET", path: "/v1/images/ghcr.io/acme/tool:1.2",
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "ImageStatus", Req: api.ImageStatusRequest{Name: "ghcr.io/acme/tool:1.2"}},
		},
		{
			name: "image status of an escaped OCI ref", method: "GET", path: "/v1/images/ghcr.io%2Facme%2Ftool:1.2",
			wantStatus: 200,
			wantCall:   &functionstest.Call{Method: "ImageStatus", Req: api.ImageStatusRequest{Name: "ghcr.io/acme/tool:1.2"}},
		},
		{
			name: "healthz", method: "GET", path: "/healthz",
			wantStatus: 200,
			wantBody:   map[string]any{"status": "ok", "version": "v-test"},
		},
		{
			name: "unknown route", method: "GET", path: "/v2/whatever",
			wantStatus: 404,
			wantBody:   map[string]any{"code": "route_not_found"},
		},
		{
			name: "wrong method", method: "PUT", path: "/v1/sandboxes",
			wantStatus: 405,
			wantBody:   map[string]any{"code": "method_not_allowed"},
		},
	}
	errorClasses := []struct {
		code   errdefs.Code
		status int
	}{
		{errdefs.CodeMalformed, 400},
		{errdefs.CodeNotFound, 404},
		{errdefs.CodeExecBusy, 409},
		{errdefs.CodeStopped, 409},
		{errdefs.CodeImageNotAllowed, 403},
		{errdefs.CodeImageMissing, 422},
		{errdefs.CodeImagePull, 503},
		{errdefs.CodeBootFailed, 503},
		{errdefs.CodeCapacity, 429},
		{errdefs.CodeInternal, 500},
	}
	for _, ec := range errorClasses {
		tests = append(tests, routeTest{
			name: "create error " + string(ec.code), method: "POST", path: "/v1/sandboxes",
			body: `{"image":"python"}`,
			setup: func(f *functionstest.Fake) {
				f.CreateFunc = func(context.Context, api.CreateRequest) (api.CreateResponse, error) {
					return api.CreateResponse{}, errdefs.New(ec.code, "boom").WithFix(map[string]any{"cpus": 1}, "lower cpus")
				}
			},
			wantStatus: ec.status,
			wantBody:   map[string]any{"code": string(ec.code), "message": "boom", "fix_note": "lower cpus", "retryable": ec.code.Retryable()},
		})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			if tt.setup != nil {
				tt.setup(fake)
			}
			h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Version: "v-test"})
			status, body, raw := do(t, h, tt.method, tt.path, tt.body, nil)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tt.wantStatus, raw)
			}
			got := body
			if status >= 400 {
				env, ok := body["error"].(map[string]any)
				if !ok {
					t.Fatalf("error body has no envelope: %s", raw)
				}
				for _, k := range []string{"type", "code", "message", "retryable"} {
					if _, ok := env[k]; !ok {
						t.Errorf("envelope lacks %q: %s", k, raw)
					}
				}
				got = env
			}
			for k, want := range tt.wantBody {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("body[%q] = %#v, want %#v; body %s", k, got[k], want, raw)
				}
			}
			if tt.wantCall != nil {
				calls := fake.Calls()
				if len(calls) != 1 || !reflect.DeepEqual(calls[0], *tt.wantCall) {
					t.Errorf("calls = %+v, want [%+v]", calls, *tt.wantCall)
				}
			}
		})
	}
}

func TestMethodNotAllowedSetsAllow(t *testing.T) {
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{})
	req := newRequest("PATCH", "/v1/sandboxes/"+id, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, DELETE" {
		t.Errorf("status %d Allow %q, want 405 \"GET, DELETE\"", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestBodyLimit(t *testing.T) {
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{MaxBodyBytes: 64})
	big := `{"image":"python","name":"` + strings.Repeat("x", 100) + `"}`
	tests := []struct {
		name          string
		contentLength int64 // -1: unknown (chunked)
	}{
		{"declared length", int64(len(big))},
		{"chunked", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest("POST", "/v1/sandboxes", io.NopCloser(strings.NewReader(big)))
			req.ContentLength = tt.contentLength
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"S001"`) ||
				!strings.Contains(rec.Body.String(), "larger than 64 bytes") {
				t.Errorf("status %d body %s, want 400 S001 naming the limit", rec.Code, rec.Body)
			}
		})
	}
}

func TestPanicIsInternalError(t *testing.T) {
	var logs bytes.Buffer
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		panic("kaboom")
	}}
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	status, body, raw := do(t, h, "POST", "/v1/sandboxes/"+id+"/exec", `{"cmd":"true"}`, nil)
	if status != 500 || body["error"].(map[string]any)["code"] != "S500" {
		t.Errorf("status %d body %s, want 500 S500", status, raw)
	}
	if !strings.Contains(logs.String(), "kaboom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

func TestDebugLogPerRequest(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{Logger: log})
	do(t, h, "GET", "/v1/sandboxes/"+id, "", nil)
	for _, want := range []string{"method=GET", "path=/v1/sandboxes/" + id, "status=404", "duration="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
}

// TestRequestContextReachesManager checks that a client going away cancels
// the work it asked for.
func TestRequestContextReachesManager(t *testing.T) {
	started := make(chan struct{})
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, _ api.ExecRequest) (api.ExecResponse, error) {
		close(started)
		<-ctx.Done()
		return api.ExecResponse{}, ctx.Err()
	}}
	srv := functionstest.NewServer(t, fake, httpapi.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/sandboxes/"+id+"/exec", strings.NewReader(`{"cmd":"sleep"}`))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("exec did not end after the client went away")
	}
}

// BenchmarkExec measures the transport's own cost on the hot path (the fake
// answers at once), through a real loopback connection.
func BenchmarkExec(b *testing.B) {
	srv := functionstest.NewServer(b, &functionstest.Fake{}, httpapi.Options{})
	body := []byte(`{"cmd":"true"}`)
	url := srv.URL + "/v1/sandboxes/" + id + "/exec"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkExecHandler measures the handler alone, without the network.
func BenchmarkExecHandler(b *testing.B) {
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{})
	body := `{"cmd":"true"}`
	b.ReportAllocs()
	for b.Loop() {
		req := newRequest("POST", "/v1/sandboxes/"+id+"/exec", strings.NewReader(body))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
