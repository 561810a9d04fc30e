package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// TerminalOptions say what a terminal runs and at what size.
type TerminalOptions struct {
	// Cmd is the command; empty runs the login shell of the image's user.
	Cmd []string
	// Cwd is the working directory; empty keeps the sandbox's.
	Cwd string
	// Env adds KEY=VALUE entries (TERM among them; xterm-256color when unset).
	Env []string
	// Cols and Rows are the size; 0 takes 80x24.
	Cols, Rows uint16
}

// Terminal is a process on a PTY of a sandbox, over the daemon's terminal
// WebSocket (GET /v1/sandboxes/{id}/pty). Read returns the terminal's
// output until the process exits (then io.EOF); Write types into it.
// Read and Wait must not be called concurrently; Write and Resize may be
// called at any time.
type Terminal struct {
	conn    *websocket.Conn
	ctx     context.Context
	pending []byte
	// exit is set once the exit frame came.
	exit *terminalExit
	// wmu serialises writers.
	wmu sync.Mutex
}

// terminalExit is the server's exit frame (and the resize frame's shape).
type terminalExit struct {
	Type     string `json:"type"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// maxTerminalFrame bounds one frame from the daemon.
const maxTerminalFrame = 1 << 20

// Terminal opens a terminal in sandbox id. ctx bounds the whole session:
// its end closes the terminal (and kills the process).
func (c *Client) Terminal(ctx context.Context, id string, o TerminalOptions) (*Terminal, error) {
	p, err := sandboxPath(id)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Cols > 0 {
		q.Set("cols", strconv.Itoa(int(o.Cols)))
	}
	if o.Rows > 0 {
		q.Set("rows", strconv.Itoa(int(o.Rows)))
	}
	q["cmd"], q["env"] = o.Cmd, o.Env
	if o.Cwd != "" {
		q.Set("cwd", o.Cwd)
	}
	conn, err := c.dialWebSocket(ctx, p+"/pty?"+q.Encode(), "opening a terminal in "+id)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(maxTerminalFrame)
	return &Terminal{conn: conn, ctx: ctx}, nil
}

// Read reads the terminal's output; io.EOF once the process exited.
func (t *Terminal) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.exit != nil {
			return 0, io.EOF
		}
		typ, data, err := t.conn.Read(t.ctx)
		if err != nil {
			return 0, fmt.Errorf("terminal closed before its process exited: %w", err)
		}
		if typ == websocket.MessageBinary {
			t.pending = data
			continue
		}
		var ctl terminalExit
		if err := json.Unmarshal(data, &ctl); err == nil && ctl.Type == "exit" {
			t.exit = &ctl
			t.conn.Close(websocket.StatusNormalClosure, "")
		}
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

// Write types p into the terminal.
func (t *Terminal) Write(p []byte) (int, error) {
	if err := t.send(websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize sets the terminal's size.
func (t *Terminal) Resize(cols, rows uint16) error {
	raw, _ := json.Marshal(terminalExit{Type: "resize", Cols: cols, Rows: rows})
	return t.send(websocket.MessageText, raw)
}

func (t *Terminal) send(typ websocket.MessageType, p []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.conn.Write(t.ctx, typ, p)
}

// Wait reads (and discards) output until the process exits and returns its
// exit code (128+signal when a signal killed it).
func (t *Terminal) Wait() (int, error) {
	if _, err := io.Copy(io.Discard, t); err != nil {
		return 0, err
	}
	if t.exit.ExitCode == nil {
		return 0, errors.New("the terminal's process ended without an exit status")
	}
	return *t.exit.ExitCode, nil
}

// Close ends the session; the process is killed if still running.
func (t *Terminal) Close() error {
	return t.conn.Close(websocket.StatusNormalClosure, "")
}

// ExitSignal names the signal that killed the process, after Wait; "" if
// none did.
func (t *Terminal) ExitSignal() string {
	if t.exit == nil {
		return ""
	}
	return t.exit.Signal
}

// Forward opens a raw TCP connection to an exposed port of a sandbox
// (GET /v1/sandboxes/{id}/forward/{port}, a WebSocket); it lives until it
// is closed or ctx ends.
func (c *Client) Forward(ctx context.Context, id string, port int) (net.Conn, error) {
	p, err := sandboxPath(id)
	if err != nil {
		return nil, err
	}
	conn, err := c.dialWebSocket(ctx, p+"/forward/"+strconv.Itoa(port), fmt.Sprintf("forwarding port %d of %s", port, id))
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	return websocket.NetConn(ctx, conn, websocket.MessageBinary), nil
}

// dialWebSocket opens the WebSocket of path with the client's token; what
// says what for an error.
func (c *Client) dialWebSocket(ctx context.Context, path, what string) (*websocket.Conn, error) {
	h := http.Header{}
	if c.auth != "" {
		h.Set("Authorization", c.auth)
	}
	conn, resp, err := websocket.Dial(ctx, strings.Replace(c.base, "http", "ws", 1)+path, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.httpc})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, decodeError(resp)
		}
		if ctx.Err() == nil && isDialError(err) {
			return nil, &unreachableError{url: c.URL(), err: err}
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return conn, nil
}
