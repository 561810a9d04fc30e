package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// engineConn is a minimal engine-protocol client: it sends invocations and
// routes each result to its caller by invocation id.
type engineConn struct {
	t *testing.T
	c *websocket.Conn

	mu      sync.Mutex
	pending map[string]chan engineResult
}

type engineResult struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// dialEngine opens an engine session with d.
func dialEngine(t *testing.T, d *daemon) *engineConn {
	t.Helper()
	return dialEngineWithToken(t, d, "")
}

// dialEngineWithToken is dialEngine for the owner of token ("" is none).
func dialEngineWithToken(t *testing.T, d *daemon, token string) *engineConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var opts *websocket.DialOptions
	if token != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}}
	}
	c, _, err := websocket.Dial(ctx, d.engineURL, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", d.engineURL, err)
	}
	c.SetReadLimit(-1)
	e := &engineConn{t: t, c: c, pending: map[string]chan engineResult{}}
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m struct {
				Type         string `json:"type"`
				InvocationID string `json:"invocation_id"`
				engineResult
			}
			if json.Unmarshal(b, &m) != nil || m.Type != "invocationresult" {
				continue
			}
			e.mu.Lock()
			ch := e.pending[m.InvocationID]
			delete(e.pending, m.InvocationID)
			e.mu.Unlock()
			if ch != nil {
				ch <- m.engineResult
			}
		}
	}()
	t.Cleanup(func() { c.CloseNow() })
	return e
}

// invoke sends an invocation and returns the channel of its result.
func (e *engineConn) invoke(fn string, payload any) <-chan engineResult {
	e.t.Helper()
	id := uuid.NewString()
	ch := make(chan engineResult, 1)
	e.mu.Lock()
	e.pending[id] = ch
	e.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": fn, "data": payload})
	if err := e.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		e.t.Fatalf("sending %s: %v", fn, err)
	}
	return ch
}

// call invokes fn and decodes its result into out; it returns the
// envelope of a handler error, and fails on any other error.
func (e *engineConn) call(fn string, payload, out any) *api.ErrorEnvelope {
	e.t.Helper()
	return e.callFor(e.t, fn, payload, out)
}

// callFor is call failing t, a subtest of the connection's test.
func (e *engineConn) callFor(t *testing.T, fn string, payload, out any) *api.ErrorEnvelope {
	t.Helper()
	select {
	case r := <-e.invoke(fn, payload):
		if r.Error != nil {
			env, ok := strings.CutPrefix(r.Error.Message, "handler error: ")
			var envelope api.ErrorEnvelope
			if r.Error.Code != "invocation_failed" || !ok || json.Unmarshal([]byte(env), &envelope) != nil {
				t.Fatalf("%s: engine error %+v", fn, *r.Error)
			}
			return &envelope
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				t.Fatalf("%s: result %s: %v", fn, r.Result, err)
			}
		}
		return nil
	case <-time.After(15 * time.Minute): // a first call may wait for a preset's build
		t.Fatalf("%s: no result", fn)
	}
	return nil
}

// sandboxState returns the list entry of sandbox id.
func sandboxState(t *testing.T, d *daemon, id string) api.SandboxInfo {
	t.Helper()
	info, err := d.c.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return info
}

func TestSandboxRun(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	e := dialEngine(t, d)
	tests := []struct {
		name   string
		req    api.RunRequest
		stdout string
	}{
		{"python with files env and stdin", api.RunRequest{
			Image: "python", Lang: "python",
			Code:  "import sys; sys.path.insert(0, '/srv/lib'); import helper, os; print(helper.V, os.environ['MODE'], sys.stdin.read())",
			Files: []api.RunFile{{Path: "/srv/lib/helper.py", Content: "V = 'from a file'\n"}},
			Env:   api.Env{"MODE=run"}, Stdin: base64.StdEncoding.EncodeToString([]byte("and stdin")),
		}, "from a file run and stdin\n"},
		{"node", api.RunRequest{Image: "node", Lang: "js", Code: "console.log([1, 2, 3].map((x) => x * 2).join(','))"}, "2,4,6\n"},
		{"shell with pipes", api.RunRequest{Image: "python", Lang: "bash", Code: "echo $0; printf 'b\\na\\n' | sort | tr '\\n' ' '"}, "/tmp/run.sh\na b "},
		{"interpreter path", api.RunRequest{Image: "python", Lang: "/usr/bin/python3", Code: "print(__file__)"}, "/tmp/run.python3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res api.RunResponse
			if env := e.callFor(t, api.FnRun, tt.req, &res); env != nil {
				t.Fatalf("run: %+v", env)
			}
			if res.Stdout != tt.stdout || !res.Success || res.SandboxID != "" {
				t.Fatalf("run = %+v, want stdout %q", res, tt.stdout)
			}
		})
	}
	// Through the function endpoint the same function answers the same way.
	var res api.RunResponse
	if err := d.c.Call(context.Background(), api.FnRun, api.RunRequest{Image: "python", Lang: "py", Code: "print(6*7)"}, &res); err != nil || res.Stdout != "42\n" {
		t.Fatalf("run through /v1/functions = %+v, %v", res, err)
	}
	// Every run's sandbox is stopped.
	list, err := d.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sandboxes) != len(tests)+1 {
		t.Fatalf("%d sandboxes listed, want %d", len(list.Sandboxes), len(tests)+1)
	}
	for _, sb := range list.Sandboxes {
		if !sb.Stopped {
			t.Errorf("run sandbox %s still live", sb.SandboxID)
		}
	}
}

func TestSandboxRunKeepAndFailures(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	e := dialEngine(t, d)

	var kept api.RunResponse
	if env := e.call(api.FnRun, api.RunRequest{Image: "python", Lang: "sh", Code: "echo state > /tmp/state", KeepSandbox: true}, &kept); env != nil {
		t.Fatalf("run: %+v", env)
	}
	d.ids = append(d.ids, kept.SandboxID)
	if r := d.exec(kept.SandboxID, "cat", "/tmp/state"); r.Stdout != "state\n" {
		t.Fatalf("kept sandbox lost its state: %+v", r)
	}

	env := e.call(api.FnRun, api.RunRequest{Image: "python", Lang: "python", Code: "import time; print('partial', flush=True); time.sleep(30)", TimeoutMs: 500}, nil)
	if env == nil || env.Code != "S200" || env.Fix["context"] != "during sandbox::run step exec" || env.Fix["inner_code"] != "S200" {
		t.Fatalf("timed-out run: %+v, want S200 with the exec step", env)
	}
	id, _ := env.Fix["sandbox_id"].(string)
	if info := sandboxState(t, d, id); !info.Stopped {
		t.Fatalf("timed-out run left sandbox %s live", id)
	}

	env = e.call(api.FnRun, api.RunRequest{Image: "python", Lang: "python", Code: "x", Files: []api.RunFile{{Path: "/proc/sys/kernel/hostname", Content: "x"}}}, nil)
	if env == nil || env.Fix["context"] != "during sandbox::run step write_files" || env.Fix["inner_code"] != env.Code || !strings.HasPrefix(env.Code, "S21") {
		t.Fatalf("run writing into /proc: %+v, want an S21x error of the write_files step", env)
	}
	if info := sandboxState(t, d, env.Fix["sandbox_id"].(string)); !info.Stopped {
		t.Fatal("failed run left its sandbox live")
	}

	env = e.call(api.FnRun, api.RunRequest{Image: "nope", Lang: "python", Code: "x"}, nil)
	if env == nil || env.Code != "S100" || env.Fix["context"] != "during sandbox::run step create" {
		t.Fatalf("run of an unknown image: %+v", env)
	}
	if _, ok := env.Fix["sandbox_id"]; ok {
		t.Fatalf("a failed create names a sandbox: %+v", env)
	}
}

// TestEngineDisconnectStopsWork checks that a client that goes away mid-call
// leaks nothing: its exec is killed inside the sandbox, and a sandbox::run
// it was waiting for is stopped.
func TestEngineDisconnectStopsWork(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	e := dialEngine(t, d)
	e.invoke(api.FnExec, api.ExecRequest{SandboxID: id, Argv: []string{"sleep", "300"}, TimeoutMs: 300_000})
	runCh := e.invoke(api.FnRun, api.RunRequest{Image: "python", Lang: "sh", Code: "sleep 300", TimeoutMs: 300_000})
	if !testutil.Poll(2*time.Minute, func() bool { return sandboxState(t, d, id).ExecInFlight > 0 && runStarted(t, d, id) }) {
		t.Fatal("the calls did not start")
	}
	e.c.CloseNow()
	select {
	case r := <-runCh:
		t.Fatalf("got a result after closing: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}

	var list api.ListResponse
	if !testutil.Poll(time.Minute, func() bool {
		var err error
		if list, err = d.c.List(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, sb := range list.Sandboxes {
			if sb.SandboxID == id && sb.ExecInFlight > 0 || sb.SandboxID != id && !sb.Stopped {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("work of a gone client still runs: %+v", list.Sandboxes)
	}
	r := d.exec(id, "python3", "-c", "import os; print(sum(1 for p in os.listdir('/proc') if p.isdigit() and p != str(os.getpid()) and b'sleep' in open('/proc/%s/cmdline' % p, 'rb').read()))")
	if r.Stdout != "0\n" {
		t.Fatalf("sleep still runs in the sandbox: %+v", r)
	}
}

// runStarted reports whether a sandbox other than id exists (the run's).
func runStarted(t *testing.T, d *daemon, id string) bool {
	list, err := d.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list.Sandboxes {
		if sb.SandboxID != id && sb.ExecInFlight > 0 {
			return true
		}
	}
	return false
}

// TestEngineConcurrentCalls runs execs on two sandboxes at once over one
// connection: short ones answer while long ones, started first, still
// run. The long ones wait for a file the test writes once every short
// answer is in, so the order is the test's, not the scheduler's.
func TestEngineConcurrentCalls(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ids := []string{d.create(api.CreateRequest{Image: "python"}), d.create(api.CreateRequest{Image: "python"})}
	e := dialEngine(t, d)
	type answer struct {
		name string
		res  api.ExecResponse
	}
	answers := make(chan answer, 8)
	for i, id := range ids {
		for _, kind := range []string{"long", "short", "short", "long"} {
			name := fmt.Sprintf("%d-%s", i, kind)
			script := "echo " + name
			if kind == "long" {
				script = "until [ -e /tmp/release ]; do sleep 0.05; done; " + script
			}
			ch := e.invoke(api.FnExec, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", script}, TimeoutMs: setupTimeoutMs})
			go func() {
				r := <-ch
				var res api.ExecResponse
				json.Unmarshal(r.Result, &res)
				answers <- answer{name, res}
			}()
		}
	}
	collect := func(kind string) {
		t.Helper()
		for range 4 {
			select {
			case a := <-answers:
				if a.res.Stdout != a.name+"\n" || !strings.HasSuffix(a.name, "-"+kind) {
					t.Fatalf("while the %s execs were due, exec %s answered %+v", kind, a.name, a.res)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("the %s execs did not all answer: the calls did not run at once", kind)
			}
		}
	}
	collect("short")
	release := ""
	for _, id := range ids {
		if _, err := d.c.FsWrite(context.Background(), api.FsWriteRequest{SandboxID: id, Path: "/tmp/release", Content: &release}); err != nil {
			t.Fatal(err)
		}
	}
	collect("long")
}

// TestFunctionEndpoint checks that the sixteen functions of the contract
// answer at POST /v1/functions/{id}, and that an unknown id is 404
// function_not_found.
func TestFunctionEndpoint(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ids := append([]string{api.FnRun, api.FnCreate, api.FnExec, api.FnStop, api.FnList, api.FnCatalogList}, api.FsFns...)
	for _, id := range ids {
		// An empty payload: a result, or an S-code error for the missing fields.
		err := d.c.Call(context.Background(), id, map[string]any{}, nil)
		var env *api.ErrorEnvelope
		if err != nil && (!errors.As(err, &env) || !strings.HasPrefix(env.Code, "S")) {
			t.Errorf("%s: %v", id, err)
		}
	}
	err := d.c.Call(context.Background(), "sandbox::nope", map[string]any{}, nil)
	if env := wantCode(t, err, "function_not_found"); !strings.HasSuffix(env.DocsURL, "#function_not_found") {
		t.Fatalf("envelope = %+v", env)
	}
}
