package engineapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// session is one engine connection.
type session struct {
	s    *Server
	conn *websocket.Conn
	// ctx is cancelled when the connection ends: it cancels the session's
	// invocations. Both it and base act for the session's owner.
	ctx    context.Context
	cancel context.CancelFunc
	// base is the context of fire-and-forget invocations, which outlive
	// the connection: it ends only when the server shuts down.
	base context.Context
	// slots holds one token per invocation running for this connection.
	slots chan struct{}
	// calls counts the invocations that answer on this connection.
	calls sync.WaitGroup

	mu sync.Mutex
	// The fields below are guarded by mu.
	workerID string
	log      *slog.Logger
	// triggers cancels each trigger of the session by id.
	triggers map[string]context.CancelFunc
	// pending waits for the worker's answer to each event a trigger sent,
	// by invocation id.
	pending map[string]chan *errorBody
	// info is what the worker said of itself; functions the ids it
	// registered (introspect.go).
	info      workerInfo
	functions map[string]bool
}

// serveSession runs one engine session until the client goes away or the
// server shuts down.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	owner := auth.OwnerFrom(r.Context())
	if !s.openSession(owner) {
		http.Error(w, fmt.Sprintf("%d engine sessions are open for this owner (engine_sessions_per_owner); close one first", s.opts.SessionsPerOwner),
			http.StatusTooManyRequests)
		return
	}
	defer s.closeSession(owner)
	conn := s.accept(w, r)
	if conn == nil {
		return
	}
	defer s.active.Done()
	// Messages are read through readMessage's own limit, which drains an
	// oversized message instead of dropping the connection.
	conn.SetReadLimit(-1)
	// The owner was read from r before the upgrade (authorized).
	base := auth.WithOwner(s.ctx, owner)
	ctx, cancel := context.WithCancel(base)
	sess := &session{s: s, conn: conn, ctx: ctx, cancel: cancel, base: base, slots: make(chan struct{}, s.opts.MaxInFlight),
		triggers: map[string]context.CancelFunc{}, pending: map[string]chan *errorBody{}, functions: map[string]bool{}}
	s.mu.Lock()
	s.live[sess] = owner
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.live, sess)
		s.mu.Unlock()
	}()
	id, token := s.workers.add()
	sess.setWorker(id, r.RemoteAddr)
	sess.logger().Debug("engine session open")
	sess.send(workerRegistered{Type: typeWorkerRegistered, WorkerID: id, ReattachToken: token})

	stopClose := context.AfterFunc(s.ctx, func() { conn.Close(websocket.StatusGoingAway, "hutch is shutting down") })
	defer stopClose()
	go sess.pinger()
	err := sess.readLoop()
	s.workers.leaving(sess.worker())
	cancel()
	sess.calls.Wait()
	conn.CloseNow()
	s.workers.disconnect(sess.worker())
	sess.logger().Debug("engine session closed", "reason", err)
}

// openSession counts one more session of owner, unless it has as many as
// it may.
func (s *Server) openSession(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[owner] >= s.opts.SessionsPerOwner {
		return false
	}
	s.sessions[owner]++
	return true
}

// closeSession counts one session of owner less.
func (s *Server) closeSession(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[owner]--; s.sessions[owner] <= 0 {
		delete(s.sessions, owner)
	}
}

func (sess *session) setWorker(id, remote string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.workerID = id
	sess.log = sess.s.log.With("worker", id, "remote", remote)
}

func (sess *session) worker() string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.workerID
}

func (sess *session) logger() *slog.Logger {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.log
}

// pinger pings the client until the session ends; a client that does not
// answer within the interval is disconnected, which ends the session.
func (sess *session) pinger() {
	t := time.NewTicker(sess.s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-sess.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(sess.ctx, sess.s.opts.PingInterval)
		err := sess.conn.Ping(ctx)
		cancel()
		if err != nil {
			return // the failed ping closed the connection
		}
	}
}

// keptReadBuffer is the largest read buffer a session keeps between
// messages; one grown larger by a large message is dropped after it.
const keptReadBuffer = 64 << 10

// readLoop reads messages until the connection ends. It never blocks on
// an invocation, so control frames are answered at all times.
func (sess *session) readLoop() error {
	var buf bytes.Buffer
	for {
		if buf.Cap() > keptReadBuffer {
			buf = bytes.Buffer{}
		}
		// Never cancelled: a cancelled read would close the connection
		// without a close frame; the server closes it properly instead.
		_, rd, err := sess.conn.Reader(context.Background())
		if err != nil {
			return err
		}
		tooLarge, err := readMessage(rd, &buf, sess.s.opts.MaxMessageBytes)
		if err != nil {
			return err
		}
		if tooLarge {
			sess.tooLarge(buf.Bytes())
			continue
		}
		sess.handle(buf.Bytes())
	}
}

// readMessage reads one message into buf, up to limit bytes; a larger
// message is drained (buf keeps its first limit bytes) and reported.
func readMessage(rd io.Reader, buf *bytes.Buffer, limit int64) (tooLarge bool, err error) {
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(rd, limit+1))
	if err != nil {
		return false, err
	}
	if n <= limit {
		return false, nil
	}
	buf.Truncate(int(limit))
	_, err = drain(rd)
	return true, err
}

func drain(rd io.Reader) (int64, error) { return io.Copy(io.Discard, rd) }

// tooLarge answers a message over the size limit, when its head names the
// invocation.
func (sess *session) tooLarge(head []byte) {
	id, fid := peekHeader(head)
	msg := fmt.Sprintf("message larger than %d bytes; send large file bodies as streams (engine::channels::create)", sess.s.opts.MaxMessageBytes)
	if id == nil {
		sess.logger().Warn("engine message dropped", "reason", msg)
		return
	}
	sess.send(invocationResult{Type: typeInvocationResult, InvocationID: id, FunctionID: fid,
		Error: &errorBody{Code: codeMessageTooLarge, Message: msg}})
}

// handle acts on one message.
func (sess *session) handle(msg []byte) {
	var m inbound
	if err := json.Unmarshal(msg, &m); err != nil {
		sess.badMessage(msg, fmt.Sprintf("message is not a JSON object of the engine protocol: %v", err))
		return
	}
	switch m.Type {
	case typeInvokeFunction:
		sess.invoke(m)
	case typePing:
		sess.send(simpleMessage{Type: typePong})
	case typePong:
	case typeReattach:
		sess.reattach(m)
	case typeRegisterTrigger:
		sess.registerTrigger(m)
	case typeUnregisterTrigger:
		sess.unregisterTrigger(m.ID)
	case typeInvocationResult:
		sess.answered(m)
	case typeRegisterFunction, typeUnregisterFunction:
		// Listed by engine::workers::*; hutch calls a worker's function
		// only for the triggers it registers.
		sess.noteFunction(m.ID, m.Type == typeUnregisterFunction)
	case typeRegisterTriggerType, typeUnregisterTriggerType:
		sess.logger().Debug("engine message ignored", "type", m.Type, "id", m.ID)
	default:
		sess.badMessage(msg, fmt.Sprintf("unknown message type %q", clip(m.Type, 64)))
	}
}

// badMessage answers a message hutch cannot act on, when it names an
// invocation; otherwise it logs it.
func (sess *session) badMessage(msg []byte, reason string) {
	id, fid := peekHeader(msg)
	if id == nil {
		sess.logger().Warn("engine message dropped", "reason", reason, "head", clip(string(msg), 128))
		return
	}
	sess.send(invocationResult{Type: typeInvocationResult, InvocationID: id, FunctionID: fid,
		Error: &errorBody{Code: codeInvalidMessage, Message: reason}})
}

// reattach lets a reconnecting client keep its previous worker id.
func (sess *session) reattach(m inbound) {
	current := sess.worker()
	token, ok := sess.s.workers.reattach(m.PreviousWorkerID, m.ReattachToken, current)
	if !ok {
		sess.logger().Debug("engine reattach refused", "previous_worker", clip(m.PreviousWorkerID, 64))
		return
	}
	sess.mu.Lock()
	sess.workerID = m.PreviousWorkerID
	sess.log = sess.log.With("worker", m.PreviousWorkerID)
	sess.mu.Unlock()
	sess.logger().Debug("engine worker reattached", "replaces", current)
	sess.send(workerRegistered{Type: typeWorkerRegistered, WorkerID: m.PreviousWorkerID, ReattachToken: token})
}

// invoke starts one invocation. It answers at once when the message is
// not runnable; otherwise the invocation runs in its own goroutine and
// answers when it ends (nothing for action void).
func (sess *session) invoke(m inbound) {
	id := bytes.TrimSpace(m.InvocationID)
	void := m.Action.isVoid()
	hasID := len(id) > 0 && !bytes.Equal(id, nullID)
	fail := func(code, msg string) {
		if !hasID {
			sess.logger().Warn("engine invocation refused", "function", clip(m.FunctionID, 128), "code", code, "reason", msg)
			return
		}
		sess.send(invocationResult{Type: typeInvocationResult, InvocationID: id, FunctionID: m.FunctionID,
			Error: &errorBody{Code: code, Message: msg}})
	}
	switch {
	case hasID && id[0] != '"':
		fail(codeInvalidMessage, "invocation_id must be a string")
	case !hasID && !void:
		// There is nobody to answer: the caller cannot match a result.
		fail(codeInvalidMessage, "invokefunction without invocation_id needs action {\"type\":\"void\"}")
	case m.FunctionID == "":
		fail(codeInvalidMessage, "function_id is required")
	case m.Action != nil && m.Action.Type == "enqueue":
		fail(codeEnqueueError, "hutch has no queues; invoke without an action, or with action void")
	case m.Action != nil && !void:
		fail(codeInvalidMessage, fmt.Sprintf("unknown action type %q (hutch takes void)", clip(m.Action.Type, 32)))
	default:
		payload := int64(len(m.Data))
		if !sess.acquire(fail, payload) { // issue 38: and the daemon's invocation and body budgets
			return
		}
		if void {
			sess.runVoid(m, payload)
			return
		}
		sess.calls.Add(1)
		go func() {
			defer sess.calls.Done()
			defer sess.release(payload)
			res := sess.call(sess.ctx, m)
			res.InvocationID = id
			sess.send(res)
		}()
	}
}

// runVoid runs a fire-and-forget invocation. It is not cancelled when the
// client goes away (the client did not wait for it), only when the server
// shuts down.
func (sess *session) runVoid(m inbound, payload int64) {
	if !sess.s.track() {
		sess.release(payload)
		return
	}
	log := sess.logger()
	go func() {
		defer sess.s.active.Done()
		defer sess.release(payload)
		res := sess.call(sess.base, m)
		if res.Error != nil {
			log.Info("engine void invocation failed", "function", clip(m.FunctionID, 128), "code", res.Error.Code, "message", clip(res.Error.Message, 512))
		}
	}()
}

// call runs one function and builds its result message, never panicking.
func (sess *session) call(ctx context.Context, m inbound) (res invocationResult) {
	res = invocationResult{Type: typeInvocationResult, FunctionID: m.FunctionID}
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			sess.logger().Error("panic in engine invocation", "function", m.FunctionID, "panic", v, "stack", string(debug.Stack()))
			res.Result, res.Error = nil, engineError(errdefs.New(errdefs.CodeInternal, "internal error: %v", v))
		}
		log := sess.logger()
		if log.Enabled(ctx, slog.LevelDebug) {
			code := ""
			if res.Error != nil {
				code = res.Error.Code
			}
			log.LogAttrs(ctx, slog.LevelDebug, "engine invocation", slog.String("function", m.FunctionID),
				slog.String("error", code), slog.Duration("duration", time.Since(start)))
		}
	}()
	out, err := sess.s.dispatch(ctx, sess, m.FunctionID, m.Data)
	if err == nil {
		var raw []byte
		raw, err = api.Marshal(out)
		if err == nil {
			res.Result = raw
			return res
		}
		err = errdefs.New(errdefs.CodeInternal, "encoding the result of %s: %v", m.FunctionID, err)
	}
	res.Error = engineError(err)
	return res
}

// send writes one message. A failed write ends the connection (the
// library closes it), which ends the session.
func (sess *session) send(v any) {
	b, err := api.Marshal(v)
	if err != nil {
		sess.logger().Error("encoding engine message", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sess.s.opts.WriteTimeout)
	defer cancel()
	if err := sess.conn.Write(ctx, websocket.MessageText, b); err != nil {
		sess.logger().Debug("engine write failed", "err", err)
	}
}

// clip shortens s for a log record or message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
