package engineapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// The tests drive the transport with a Go WebSocket client over the shared
// fake manager: a real manager needs root and runsc (integration/engine_test.go
// and the JS conformance suite drive a real daemon).

// wait bounds every wait of these tests.
const wait = 30 * time.Second

// testServer serves the transport over fake until the test ends.
func testServer(t *testing.T, fake *functionstest.Fake, opts Options) (*Server, string) {
	t.Helper()
	return serveHandler(t, New(functions.New(functionstest.DepsOf(fake)), opts))
}

// serveHandler serves s until the test ends and returns its ws:// URL.
func serveHandler(t *testing.T, s *Server) (*Server, string) {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
	})
	return s, "ws" + strings.TrimPrefix(hs.URL, "http")
}

// wsClient is one engine connection of a test; a goroutine reads every
// message into msgs, so control frames are answered.
type wsClient struct {
	t      *testing.T
	c      *websocket.Conn
	msgs   chan map[string]any
	closed chan error
	// hello is the workerregistered message that opened the session.
	hello map[string]any
}

// dial opens a session and reads its workerregistered greeting.
func dial(t *testing.T, url string) *wsClient {
	t.Helper()
	return dialWith(t, url, nil)
}

// dialWith is dial with opts (a bearer token's header).
func dialWith(t *testing.T, url string, opts *websocket.DialOptions) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(-1)
	wc := &wsClient{t: t, c: c, msgs: make(chan map[string]any, 1024), closed: make(chan error, 1)}
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				wc.closed <- err
				close(wc.msgs)
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				wc.closed <- err
				close(wc.msgs)
				return
			}
			wc.msgs <- m
		}
	}()
	t.Cleanup(func() { c.CloseNow() })
	wc.hello = wc.recv()
	if wc.hello["type"] != "workerregistered" || wc.hello["worker_id"] == "" || wc.hello["reattach_token"] == "" {
		t.Fatalf("first message = %v, want workerregistered with worker_id and reattach_token", wc.hello)
	}
	return wc
}

// send writes one JSON message.
func (wc *wsClient) send(v any) {
	wc.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		wc.t.Fatal(err)
	}
	wc.sendRaw(websocket.MessageText, b)
}

func (wc *wsClient) sendRaw(typ websocket.MessageType, b []byte) {
	wc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := wc.c.Write(ctx, typ, b); err != nil {
		wc.t.Fatalf("write: %v", err)
	}
}

// invoke sends an invokefunction.
func (wc *wsClient) invoke(id, fn string, data any) {
	wc.t.Helper()
	wc.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": fn, "data": data})
}

// recv returns the next message, failing after wait.
func (wc *wsClient) recv() map[string]any {
	wc.t.Helper()
	select {
	case m, ok := <-wc.msgs:
		if !ok {
			wc.t.Fatalf("connection closed: %v", <-wc.closed)
		}
		return m
	case <-time.After(wait):
		wc.t.Fatal("no message within the wait")
	}
	return nil
}

// call invokes fn and returns its result message.
func (wc *wsClient) call(id, fn string, data any) map[string]any {
	wc.t.Helper()
	wc.invoke(id, fn, data)
	m := wc.recv()
	if m["type"] != "invocationresult" || m["invocation_id"] != id {
		wc.t.Fatalf("answer to %s = %v, want its invocationresult", id, m)
	}
	return m
}

// alive checks that the session still answers, and that nothing else was
// sent before the answer.
func (wc *wsClient) alive() {
	wc.t.Helper()
	wc.send(map[string]any{"type": "ping"})
	if m := wc.recv(); m["type"] != "pong" {
		wc.t.Fatalf("answer to ping = %v, want pong (and nothing before it)", m)
	}
}

// handlerEnvelope parses the envelope of an invocation_failed error the
// way seed 000's error-handling example does.
func handlerEnvelope(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != "invocation_failed" {
		t.Fatalf("result %v, want an invocation_failed error", m)
	}
	msg, _ := e["message"].(string)
	rest, ok := strings.CutPrefix(msg, "handler error: ")
	if !ok {
		t.Fatalf("error message %q does not start with \"handler error: \"", msg)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(rest), &env); err != nil {
		t.Fatalf("envelope %q: %v", rest, err)
	}
	return env
}
