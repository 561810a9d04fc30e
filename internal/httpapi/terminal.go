package httpapi

// The terminal route: GET /v1/sandboxes/{id}/pty?cols=&rows=&cmd=&cwd=&env=
// upgrades to a WebSocket over a process started on a PTY. Binary frames
// are terminal bytes both ways; text frames are JSON control: from the
// client {"type":"resize","cols":N,"rows":N}, from the server, once the
// process has exited, {"type":"exit","exit_code":N} (with "signal" when one
// killed it) before a normal close. A client that offers the subprotocol
// "hutch.terminal" gets it chosen; a browser, which cannot set headers,
// offers its bearer token as a second one (auth.BearerProtocol). The
// client going away kills the process. Everything goes through the
// process functions of the table
// (start with pty, output with follow, stdin, resize, kill), so a terminal
// is owner-scoped, limited and counted like any other process.

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Terminal defaults and bounds.
const (
	defaultCols, defaultRows = 80, 24
	// maxTerminalFrame bounds a frame from the client (a paste, a control).
	maxTerminalFrame = 64 << 10
	// terminalWriteTimeout bounds sending one frame when the server has no
	// write timeout of its own: a client that stops reading is cut off.
	terminalWriteTimeout = 30 * time.Second
	// terminalTag marks a terminal's process in sandbox::process::list.
	terminalTag = "terminal"
	// terminalProtocol is the subprotocol the route speaks, chosen when
	// the client offers it.
	terminalProtocol = "hutch.terminal"
)

// terminalControl is a text frame.
type terminalControl struct {
	Type     string `json:"type"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// terminal starts the PTY process and answers with the session that
// upgrades the connection; a bad request or a refused start is an ordinary
// error answer.
func (s *server) terminal(r *http.Request, _ []byte) (any, error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return nil, transportError(http.StatusUpgradeRequired, "websocket_required",
			"GET /v1/sandboxes/{id}/pty is a WebSocket: send Upgrade: websocket")
	}
	req, err := terminalRequest(r)
	if err != nil {
		return nil, err
	}
	res, err := functions.Call[api.ProcessStartResponse](r.Context(), s.table, api.FnProcessStart, req)
	if err != nil {
		return nil, err
	}
	return &terminalSession{s: s, r: r, id: req.SandboxID, pid: res.Pid}, nil
}

// terminalRequest is the process start of a terminal request.
func terminalRequest(r *http.Request) (api.ProcessStartRequest, error) {
	q := r.URL.Query()
	size := api.PtySize{Cols: defaultCols, Rows: defaultRows}
	for _, d := range []struct {
		key string
		to  *uint16
	}{{"cols", &size.Cols}, {"rows", &size.Rows}} {
		if !q.Has(d.key) {
			continue
		}
		n, err := strconv.ParseUint(q.Get(d.key), 10, 16)
		if err != nil || n == 0 {
			return api.ProcessStartRequest{}, errdefs.Malformed("query parameter %s must be a number from 1 to 65535, not %q", d.key, q.Get(d.key))
		}
		*d.to = uint16(n)
	}
	req := api.ProcessStartRequest{SandboxID: r.PathValue("id"), Argv: q["cmd"], Env: q["env"],
		Workdir: q.Get("cwd"), Pty: &size, Tag: terminalTag}
	if len(req.Argv) == 0 {
		req.Argv = api.LoginShell
	}
	if !hasEnv(req.Env, "TERM") {
		req.Env = append(req.Env, "TERM=xterm-256color")
	}
	return req, nil
}

// hasEnv reports whether env sets key.
func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// terminalSession is one terminal's WebSocket.
type terminalSession struct {
	s   *server
	r   *http.Request
	id  string
	pid int
}

func (t *terminalSession) stream(w http.ResponseWriter, _ io.Writer) int {
	defer t.kill()
	t.s.computing(w) // the session's frames have their own deadlines
	// The guard checked the origin. A browser offers "hutch.terminal" beside
	// its token's subprotocol (auth.BearerProtocol) and needs one chosen.
	conn, err := websocket.Accept(w, t.r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{terminalProtocol}})
	if err != nil {
		return http.StatusBadRequest
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxTerminalFrame)
	ctx, cancel := context.WithCancel(t.r.Context())
	defer cancel()
	go func() {
		defer cancel()
		t.input(ctx, conn)
	}()
	end, err := t.output(ctx, conn)
	if err != nil {
		conn.Close(websocket.StatusInternalError, clip(err.Error()))
		return http.StatusSwitchingProtocols
	}
	exit := terminalControl{Type: "exit", ExitCode: end.ExitCode, Signal: end.Signal}
	raw, _ := json.Marshal(exit)
	if t.write(ctx, conn, websocket.MessageText, raw) == nil {
		conn.Close(websocket.StatusNormalClosure, "")
	}
	return http.StatusSwitchingProtocols
}

// output sends the process's output as binary frames until it exits, and
// returns its end.
func (t *terminalSession) output(ctx context.Context, conn *websocket.Conn) (api.ProcessInfo, error) {
	res, err := functions.Invoke(ctx, t.s.table, api.FnProcessOutput,
		api.ProcessOutputRequest{SandboxID: t.id, Pid: t.pid, Follow: true})
	if err != nil {
		return api.ProcessInfo{}, err
	}
	st := res.(*functions.Stream)
	defer st.Close()
	for {
		ev, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			end, _ := st.Result().(api.ProcessInfo)
			return end, nil
		}
		if err != nil {
			return api.ProcessInfo{}, err
		}
		c, ok := ev.Data.(api.OutputChunk)
		if !ok || ev.Type == api.EventExit {
			continue
		}
		b := []byte(c.Data)
		if c.Base64 {
			if b, err = base64.StdEncoding.DecodeString(c.Data); err != nil {
				return api.ProcessInfo{}, err
			}
		}
		if err := t.write(ctx, conn, websocket.MessageBinary, b); err != nil {
			return api.ProcessInfo{}, err
		}
	}
}

// input turns the client's frames into stdin writes and resizes until the
// client goes away or ctx ends.
func (t *terminalSession) input(ctx context.Context, conn *websocket.Conn) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			_, err = functions.Invoke(ctx, t.s.table, api.FnProcessStdin, api.ProcessStdinRequest{
				SandboxID: t.id, Pid: t.pid, Data: base64.StdEncoding.EncodeToString(data), Base64: true})
		} else {
			err = t.control(ctx, data)
		}
		if err != nil {
			t.s.log.Debug("terminal input", "sandbox", t.id, "pid", t.pid, "err", err)
			if errdefs.CodeOf(err) == errdefs.CodeProcessExited {
				return
			}
		}
	}
}

// control carries out a control frame from the client.
func (t *terminalSession) control(ctx context.Context, data []byte) error {
	var c terminalControl
	if err := json.Unmarshal(data, &c); err != nil {
		return errdefs.Malformed("control frame is not JSON: %v", err)
	}
	if c.Type != "resize" {
		return errdefs.Malformed("unknown control frame type %q", c.Type)
	}
	_, err := functions.Invoke(ctx, t.s.table, api.FnProcessResize,
		api.ProcessResizeRequest{SandboxID: t.id, Pid: t.pid, PtySize: api.PtySize{Cols: c.Cols, Rows: c.Rows}})
	return err
}

// write sends one frame within the write timeout.
func (t *terminalSession) write(ctx context.Context, conn *websocket.Conn, typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(t.s.writeTimeout, terminalWriteTimeout))
	defer cancel()
	return conn.Write(ctx, typ, b)
}

// kill ends the terminal's process, whatever ended the session.
func (t *terminalSession) kill() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.r.Context()), terminalWriteTimeout)
	defer cancel()
	_, _ = functions.Invoke(ctx, t.s.table, api.FnProcessKill, api.ProcessRequest{SandboxID: t.id, Pid: t.pid})
}

// clip shortens a close reason to what a close frame carries.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
