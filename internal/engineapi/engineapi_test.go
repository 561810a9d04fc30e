package engineapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/webguard"
)

func TestInvokeResultAndErrors(t *testing.T) {
	fake := &functionstest.Fake{}
	_, url := testServer(t, fake, Options{})
	wc := dial(t, url)

	m := wc.call("a", api.FnCreate, map[string]any{"image": "python"})
	res, _ := m["result"].(map[string]any)
	if m["function_id"] != api.FnCreate || res["sandbox_id"] != functionstest.DefaultID || m["error"] != nil {
		t.Fatalf("create result = %v", m)
	}

	env := handlerEnvelope(t, wc.call("b", api.FnGet, map[string]any{"sandbox_id": functionstest.DefaultID}))
	if env["code"] != "S002" || env["type"] != "validation" || env["retryable"] != false ||
		!strings.HasSuffix(env["docs_url"].(string), "#s002") {
		t.Fatalf("S002 envelope = %v", env)
	}

	m = wc.call("c", "sandbox::nope", map[string]any{})
	if e := m["error"].(map[string]any); e["code"] != "function_not_found" || !strings.Contains(e["message"].(string), "sandbox::nope") {
		t.Fatalf("unknown function = %v, want function_not_found", m)
	}

	// A contract timeout is S200 with the fix, as the seed's example parses it.
	fake.ExecFunc = func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		return api.ExecResponse{Stdout: "partial", TimedOut: true, TimeoutMs: 500}, nil
	}
	env = handlerEnvelope(t, wc.call("d", api.FnExec, map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "python3", "timeout_ms": 500}))
	if env["code"] != "S200" || env["message"] != "exec timed out after 500ms" {
		t.Fatalf("timeout envelope = %v", env)
	}
}

func TestBadInputKeepsTheSession(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		// wantCode is the error code of the answer; "" means no answer.
		wantCode string
		// wantEnvelope is the S-code of a handler error.
		wantEnvelope string
	}{
		{name: "not JSON", raw: `hello`},
		{name: "JSON array", raw: `[1,2]`},
		{name: "truncated", raw: `{"type":"invokefunction","invocation_id":"x1","function_id":"sandbox::list","data":{`, wantCode: "invalid_message"},
		{name: "unknown type", raw: `{"type":"frobnicate","invocation_id":"x2"}`, wantCode: "invalid_message"},
		{name: "unknown type without id", raw: `{"type":"frobnicate"}`},
		{name: "no type", raw: `{"invocation_id":"x3"}`, wantCode: "invalid_message"},
		{name: "missing invocation_id", raw: `{"type":"invokefunction","function_id":"sandbox::list","data":{}}`},
		{name: "numeric invocation_id", raw: `{"type":"invokefunction","invocation_id":7,"function_id":"sandbox::list"}`, wantCode: "invalid_message"},
		{name: "missing function_id", raw: `{"type":"invokefunction","invocation_id":"x4"}`, wantCode: "invalid_message"},
		{name: "enqueue", raw: `{"type":"invokefunction","invocation_id":"x5","function_id":"sandbox::list","action":{"type":"enqueue","queue":"q"}}`, wantCode: "enqueue_error"},
		{name: "unknown action", raw: `{"type":"invokefunction","invocation_id":"x6","function_id":"sandbox::list","action":{"type":"later"}}`, wantCode: "invalid_message"},
		{name: "wrong payload shape", raw: `{"type":"invokefunction","invocation_id":"x7","function_id":"sandbox::create","data":{"image":5}}`, wantCode: "invocation_failed", wantEnvelope: "S001"},
		{name: "payload not an object", raw: `{"type":"invokefunction","invocation_id":"x8","function_id":"sandbox::create","data":"python"}`, wantCode: "invocation_failed", wantEnvelope: "S001"},
		{name: "unknown payload field", raw: `{"type":"invokefunction","invocation_id":"x9","function_id":"sandbox::create","data":{"image":"python","imagee":"x"}}`, wantCode: "invocation_failed", wantEnvelope: "S001"},
		{name: "bad reattach", raw: `{"type":"reattach","previous_worker_id":"nope","reattach_token":"x"}`},
		{name: "registerfunction", raw: `{"type":"registerfunction","id":"sandbox::exec","description":"mine","request_format":{},"metadata":{}}`},
		{name: "pong", raw: `{"type":"pong"}`},
	}
	fake := &functionstest.Fake{}
	_, url := testServer(t, fake, Options{})
	wc := dial(t, url)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wc.t = t
			wc.sendRaw(websocket.MessageText, []byte(tt.raw))
			if tt.wantCode != "" {
				m := wc.recv()
				e, _ := m["error"].(map[string]any)
				if m["type"] != "invocationresult" || e == nil || e["code"] != tt.wantCode {
					t.Fatalf("answer = %v, want an error %s", m, tt.wantCode)
				}
				if tt.wantEnvelope != "" {
					if env := handlerEnvelope(t, m); env["code"] != tt.wantEnvelope {
						t.Fatalf("envelope = %v, want %s", env, tt.wantEnvelope)
					}
				}
			}
			wc.alive()
		})
	}
	wc.t = t
	if calls := fake.Methods(); len(calls) != 0 {
		t.Errorf("bad input reached the manager: %q", calls)
	}
}

func TestBinaryFramesAndOversizedMessages(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{MaxMessageBytes: 4096})
	wc := dial(t, url)
	wc.sendRaw(websocket.MessageBinary, []byte(`{"type":"invokefunction","invocation_id":"bin","function_id":"sandbox::list","data":{}}`))
	if m := wc.recv(); m["invocation_id"] != "bin" || m["result"] == nil {
		t.Fatalf("binary frame answer = %v", m)
	}
	big := fmt.Sprintf(`{"type":"invokefunction","invocation_id":"big","function_id":"sandbox::create","data":{"image":"python","name":%q}}`, strings.Repeat("x", 100_000))
	wc.sendRaw(websocket.MessageText, []byte(big))
	m := wc.recv()
	if e, _ := m["error"].(map[string]any); m["invocation_id"] != "big" || e["code"] != "message_too_large" {
		t.Fatalf("oversized answer = %v, want message_too_large", m)
	}
	wc.alive()
}

// TestConcurrentInvocations runs several execs at once on one connection
// and releases them in reverse order: each result comes as its call ends.
func TestConcurrentInvocations(t *testing.T) {
	const n = 8
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, n)
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, r api.ExecRequest) (api.ExecResponse, error) {
		var i int
		fmt.Sscan(r.Args[0], &i)
		started <- i
		<-release[i]
		zero := 0
		return api.ExecResponse{Stdout: r.Args[0], ExitCode: &zero, Success: true}, nil
	}}
	_, url := testServer(t, fake, Options{})
	wc := dial(t, url)
	for i := range n {
		wc.invoke(fmt.Sprint("call-", i), api.FnExec, map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "echo", "args": []string{fmt.Sprint(i)}})
	}
	for range n {
		select {
		case <-started:
		case <-time.After(wait):
			t.Fatal("the invocations did not all start at once")
		}
	}
	// A WebSocket ping is answered while every call is in flight.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := wc.c.Ping(ctx); err != nil {
		t.Fatalf("ping while calls are in flight: %v", err)
	}
	wc.alive()
	for i := n - 1; i >= 0; i-- {
		close(release[i])
		m := wc.recv()
		res, _ := m["result"].(map[string]any)
		if m["invocation_id"] != fmt.Sprint("call-", i) || res["stdout"] != fmt.Sprint(i) {
			t.Fatalf("after releasing %d got %v", i, m)
		}
	}
}

func TestTooManyInFlight(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, r api.ExecRequest) (api.ExecResponse, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return api.ExecResponse{}, ctx.Err()
	}}
	_, url := testServer(t, fake, Options{MaxInFlight: 2})
	wc := dial(t, url)
	exec := map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "sleep"}
	wc.invoke("1", api.FnExec, exec)
	wc.invoke("2", api.FnExec, exec)
	m := wc.call("3", api.FnExec, exec)
	if e, _ := m["error"].(map[string]any); e["code"] != "too_many_invocations" {
		t.Fatalf("third call = %v, want too_many_invocations", m)
	}
}

// TestVoid checks fire-and-forget: no reply, the work is done, and a
// disconnect right after does not cancel it.
func TestVoid(t *testing.T) {
	stopped := make(chan error, 1)
	var srv *Server
	fake := &functionstest.Fake{StopFunc: func(ctx context.Context, r api.StopRequest) (api.StopResponse, error) {
		// Once the server has dropped the session, it has cancelled the
		// session's context: the client is gone for the server too.
		if !testutil.Poll(wait, func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.live) == 0 }) {
			stopped <- errors.New("the server never saw the client go")
		} else {
			stopped <- ctx.Err()
		}
		return api.StopResponse{SandboxID: r.SandboxID, Stopped: true}, nil
	}}
	srv, url := testServer(t, fake, Options{})
	wc := dial(t, url)
	// As the SDK sends it: no invocation_id, action void.
	wc.send(map[string]any{"type": "invokefunction", "function_id": api.FnStop,
		"data": map[string]any{"sandbox_id": functionstest.DefaultID}, "action": map[string]any{"type": "void"}})
	wc.send(map[string]any{"type": "invokefunction", "function_id": "engine::workers::register",
		"data":   map[string]any{"runtime": "node", "version": "0.22.1", "name": "test", "os": "linux", "pid": 1, "telemetry": map[string]any{}},
		"action": map[string]any{"type": "void"}})
	wc.alive() // nothing was answered before the pong
	wc.c.Close(websocket.StatusNormalClosure, "")
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("void call's context ended with the connection: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("void call did not run")
	}
}

// TestDisconnectCancelsCalls checks that a client that goes away cancels
// the calls it is waiting for.
func TestDisconnectCancelsCalls(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, r api.ExecRequest) (api.ExecResponse, error) {
		close(started)
		select {
		case <-ctx.Done():
			cancelled <- ctx.Err()
		case <-time.After(wait):
			cancelled <- nil
		}
		return api.ExecResponse{}, ctx.Err()
	}}
	_, url := testServer(t, fake, Options{})
	wc := dial(t, url)
	wc.invoke("long", api.FnExec, map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "sleep"})
	<-started
	wc.c.CloseNow() // no close handshake: the client just vanishes
	select {
	case err := <-cancelled:
		if err == nil {
			t.Fatal("the call ran on after its client went away")
		}
	case <-time.After(2 * wait):
		t.Fatal("the call did not end")
	}
}

func TestReattach(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	first := dial(t, url)
	id, token := first.hello["worker_id"].(string), first.hello["reattach_token"].(string)

	// Not while the worker is still connected.
	second := dial(t, url)
	second.send(map[string]any{"type": "reattach", "previous_worker_id": id, "reattach_token": token})
	second.alive()

	first.c.Close(websocket.StatusNormalClosure, "")
	<-first.closed
	third := dial(t, url)
	third.send(map[string]any{"type": "reattach", "previous_worker_id": id, "reattach_token": "wrong"})
	third.alive()
	// The server learns of the disconnect asynchronously.
	var m map[string]any
	if !testutil.Poll(wait, func() bool {
		third.send(map[string]any{"type": "reattach", "previous_worker_id": id, "reattach_token": token})
		third.send(map[string]any{"type": "ping"})
		if m = third.recv(); m["type"] != "pong" {
			return true
		}
		return false
	}) || m["type"] != "workerregistered" {
		t.Fatalf("reattach with the right token got %v", m)
	}
	if m["worker_id"] != id || m["reattach_token"] == token {
		t.Fatalf("reattach answer = %v, want worker %s with a new token", m, id)
	}
	if p := third.recv(); p["type"] != "pong" {
		t.Fatalf("after reattach got %v", p)
	}
	third.call("after", api.FnList, map[string]any{})
}

func TestWorkerRegistration(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	wc := dial(t, url)
	wc.send(map[string]any{"type": "registerfunction", "id": "app::f"})
	wc.alive()
	// engine::workers::register with an id answers {}.
	if m := wc.call("reg", "engine::workers::register", map[string]any{"name": "w"}); m["error"] != nil {
		t.Fatalf("register = %v", m)
	}
}

func TestTelemetrySocketAccepted(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url+"/otel", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, prefix := range []string{"OTLP", "MTRC", "LOGS"} {
		if err := c.Write(ctx, websocket.MessageBinary, append([]byte(prefix), `{"resourceSpans":[]}`...)); err != nil {
			t.Fatal(err)
		}
	}
	go c.Read(ctx) // answer control frames
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("telemetry socket dropped: %v", err)
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// TestAuth checks the bearer token of the upgrade request and that every
// invocation of the session, fire-and-forget included, acts for its owner.
func TestAuth(t *testing.T) {
	const token = "alice-token-0123456789"
	tokens, err := auth.New(map[string]string{"alice": token})
	if err != nil {
		t.Fatal(err)
	}
	owners := make(chan string, 2)
	fake := &functionstest.Fake{
		ListFunc: func(ctx context.Context, _ api.ListRequest) (api.ListResponse, error) {
			owners <- auth.OwnerFrom(ctx)
			return api.ListResponse{Sandboxes: []api.SandboxInfo{}}, nil
		},
	}
	_, url := testServer(t, fake, Options{Auth: tokens})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, tt := range []struct {
		header string
		status int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong-token-0123456789", http.StatusForbidden}} {
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {tt.header}}})
		if err == nil || resp == nil || resp.StatusCode != tt.status {
			t.Fatalf("dial with %q: %v (%v), want %d", tt.header, err, resp, tt.status)
		}
	}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("dial with token: %v", err)
	}
	wc := &wsClient{t: t, c: c}
	b, _ := json.Marshal(map[string]any{"type": "invokefunction", "invocation_id": "1", "function_id": api.FnList, "data": map[string]any{}})
	wc.sendRaw(websocket.MessageText, b)
	b, _ = json.Marshal(map[string]any{"type": "invokefunction", "function_id": api.FnList, "action": map[string]any{"type": "void"}})
	wc.sendRaw(websocket.MessageText, b)
	for range 2 {
		select {
		case o := <-owners:
			if o != "alice" {
				t.Fatalf("invocation acted for %q, want alice", o)
			}
		case <-time.After(wait):
			t.Fatal("the invocations did not run")
		}
	}
	c.CloseNow()
	// /otel needs the token as well.
	if _, resp, err := websocket.Dial(ctx, url+"/otel", nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/otel without token: %v (%v), want 401", err, resp)
	}
	o, _, err := websocket.Dial(ctx, url+"/otel", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("/otel with token: %v", err)
	}
	o.CloseNow()
}

// TestGuard checks that the upgrade of every path passes the web guard:
// a foreign Host (a DNS-rebound page) or Origin is refused before any
// session, a same-origin or allowed Origin is accepted.
func TestGuard(t *testing.T) {
	guard, err := webguard.New(nil, []string{"https://ui.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, url := testServer(t, &functionstest.Fake{}, Options{Guard: guard})
	port := url[strings.LastIndex(url, ":")+1:]
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tests := []struct {
		name, path, host, origin string
		status                   int
	}{
		{"rebound session", "/", "evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"rebound telemetry", "/otel", "evil.example:" + port, "", http.StatusForbidden},
		{"rebound channel", "/ws/channels/x", "evil.example:" + port, "", http.StatusForbidden},
		{"foreign origin", "/", "", "https://evil.example", http.StatusForbidden},
		{"other loopback origin", "/", "", "http://127.0.0.1:1", http.StatusForbidden},
		{"same origin", "/", "", "http://127.0.0.1:" + port, http.StatusSwitchingProtocols},
		{"allowed origin", "/", "", "https://ui.example.com", http.StatusSwitchingProtocols},
		{"no origin", "/", "localhost:" + port, "", http.StatusSwitchingProtocols},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := &websocket.DialOptions{Host: tc.host, HTTPHeader: http.Header{}}
			if tc.origin != "" {
				opts.HTTPHeader.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.Dial(ctx, url+tc.path, opts)
			if c != nil {
				c.CloseNow()
			}
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("dial: %v (%v), want %d", err, resp, tc.status)
			}
		})
	}
}

// TestShutdown checks that Shutdown closes sessions with "going away",
// cancels their calls and returns.
func TestShutdown(t *testing.T) {
	var once sync.Once
	started := make(chan struct{})
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, r api.ExecRequest) (api.ExecResponse, error) {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return api.ExecResponse{}, errdefs.New(errdefs.CodeStopped, "daemon shut down")
	}}
	s, url := testServer(t, fake, Options{})
	wc := dial(t, url)
	wc.invoke("x", api.FnExec, map[string]any{"sandbox_id": functionstest.DefaultID, "cmd": "sleep"})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-wc.closed:
		if websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Fatalf("session ended with %v, want going away", err)
		}
	case <-time.After(wait):
		t.Fatal("session not closed")
	}
}
