package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
)

// wsSession is a caller's session on the daemon's engine WebSocket,
// speaking the engine protocol as iii-sdk does: an invokefunction message
// out, an invocationresult with the same invocation_id back. One call is
// in flight at a time.
type wsSession struct {
	conn *websocket.Conn

	// mu serializes calls and guards next.
	mu   sync.Mutex
	next int
}

// wsReadLimit bounds one message from the engine: an exec result holds
// up to two output caps (1 MiB each by default).
const wsReadLimit = 64 << 20

// dialEngine opens a session on the engine WebSocket at url.
func dialEngine(ctx context.Context, url, token string) (*wsSession, error) {
	opts := &websocket.DialOptions{}
	if token != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, url, opts)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(wsReadLimit)
	return &wsSession{conn: conn}, nil
}

// close ends the session.
func (s *wsSession) close() {
	_ = s.conn.Close(websocket.StatusNormalClosure, "")
}

// call invokes functionID with payload and decodes the result into out.
// A function error comes back as an error carrying the engine's message
// ("handler error: {envelope}").
func (s *wsSession) call(ctx context.Context, functionID string, payload, out any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := "bench-" + strconv.Itoa(s.next)
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	msg, err := json.Marshal(map[string]any{
		"type": "invokefunction", "invocation_id": id, "function_id": functionID, "data": json.RawMessage(data),
	})
	if err != nil {
		return err
	}
	if err := s.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("sending %s over the engine WebSocket: %w", functionID, err)
	}
	for {
		_, b, err := s.conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("reading the engine WebSocket: %w", err)
		}
		var res struct {
			Type         string          `json:"type"`
			InvocationID string          `json:"invocation_id"`
			Result       json.RawMessage `json:"result"`
			Error        *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("decoding an engine message: %w", err)
		}
		if res.Type != "invocationresult" || res.InvocationID != id {
			continue // workerregistered, pings, ...
		}
		if res.Error != nil {
			return fmt.Errorf("%s over the engine WebSocket: %s: %s", functionID, res.Error.Code, clip(res.Error.Message, 300))
		}
		return json.Unmarshal(res.Result, out)
	}
}

// wsExec is execVia for the engine WebSocket: sandbox::exec through the
// session the first call opens. A daemon without an engine WebSocket is a
// skip, not a failure.
func wsExec(ctx context.Context, e *env, id string, argv ...string) error {
	if e.ws == nil {
		if e.opts.EngineURL == "" {
			return skipf("no engine WebSocket address (--engine-url)")
		}
		s, err := dialEngine(ctx, e.opts.EngineURL, e.opts.Token)
		if err != nil {
			return skipf("no engine WebSocket at %s: %v", e.opts.EngineURL, err)
		}
		e.ws = s
	}
	var res api.ExecResponse
	req := api.ExecRequest{SandboxID: id, Argv: argv, TimeoutMs: uint64(execTimeout.Milliseconds())}
	if err := e.ws.call(ctx, api.FnExec, req, &res); err != nil {
		return err
	}
	return checkExit(argv[0], res)
}

// checkExit fails unless an exec's result says it exited 0.
func checkExit(cmd string, res api.ExecResponse) error {
	switch {
	case res.TimedOut:
		return fmt.Errorf("exec %s: timed out after %s", cmd, execTimeout)
	case res.ExitCode == nil || *res.ExitCode != 0:
		status := "no status"
		if res.ExitCode != nil {
			status = "status " + strconv.Itoa(*res.ExitCode)
		}
		return fmt.Errorf("exec %s: exited with %s: %s", cmd, status, clip(strings.TrimSpace(res.Stderr), 300))
	}
	return nil
}
