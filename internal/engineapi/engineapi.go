// Package engineapi is hutch's engine WebSocket transport. It speaks the wire
// protocol of the iii engine, so that the unmodified iii-sdk npm package
// (registerWorker('ws://127.0.0.1:49134'), iii.trigger({function_id,
// payload})) drives hutch, and it maps every invocation onto the one function
// table and nothing more.
//
// Paths:
//
//	/                   the engine session: invocations and their results
//	/otel               the SDK's telemetry socket: accepted, frames dropped
//	/ws/channels/{id}   one end of a stream channel (engine::channels::create)
//
// Every path first passes the web guard (Options.Guard: Host loopback or
// allowed_hosts, Origin absent, same-origin or allowed_origins); with
// tokens configured, / and /otel need one.
//
// A session starts with workerregistered. Every invokefunction runs in its
// own goroutine, so many are in flight on one connection and each result
// is sent when it is ready; action void runs without a reply. A reader
// runs on every connection at all times, so WebSocket pings are answered
// while invocations are in flight. Bad input (non-JSON frames, unknown
// types, a missing invocation_id, payloads of the wrong shape) is answered
// with an error result, or logged when there is nobody to answer; it never
// ends the session. When a client goes away, the contexts of its
// invocations are cancelled; fire-and-forget invocations run on.
//
// Large file bodies travel as streams: sandbox::fs::read answers with
// content, the reader reference of a channel that carries the file's bytes
// once opened, and sandbox::fs::write takes as content the reader reference
// of a channel the caller writes into (see streams.go).
//
// Errors of the function table travel as
// {"code":"invocation_failed","message":"handler error: <envelope JSON>"};
// an unknown function is {"code":"function_not_found"}.
package engineapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/budget"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// Defaults of Options fields left zero.
const (
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxInFlight     = 256
	DefaultWriteTimeout    = 30 * time.Second
	DefaultPingInterval    = 30 * time.Second
	// DefaultSessionsPerOwner, DefaultChannelBufferBytes and
	// DefaultChannelBufferPerOwnerBytes are config.Default's.
	DefaultSessionsPerOwner           = 64
	DefaultChannelBufferBytes         = 256 << 20
	DefaultChannelBufferPerOwnerBytes = 64 << 20
)

// Options configure the transport.
type Options struct {
	// Logger receives session and invocation records; nil discards.
	Logger *slog.Logger
	// Auth, when enabled, maps the bearer token of a session's upgrade
	// request ("Authorization: Bearer <token>") to the owner its
	// invocations act for (auth.WithOwner); a missing token is 401, a
	// wrong one 403. /otel needs the token too; the SDK opens it without
	// its headers, so SDK clients of such a daemon turn it off
	// (OTEL_ENABLED=false). The SDK opens channel ends without headers as
	// well: a channel end is authorized by its access key.
	Auth *auth.Tokens
	// Guard decides which Hosts and Origins may reach any path; nil allows
	// loopback Hosts and no foreign Origin (see internal/webguard).
	Guard *webguard.Policy
	// MaxMessageBytes limits one inbound message; a larger one is drained
	// and answered with message_too_large. 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// MaxInFlight limits the invocations running for one connection; one
	// more is answered with too_many_invocations. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// issue 38: MaxInvocations and MaxInvocationsPerOwner limit the
	// invocations running across all sessions, in all and for one owner;
	// one more is too_many_invocations. 0 means the defaults.
	MaxInvocations, MaxInvocationsPerOwner int
	// BodyBudget is the daemon's budget of request bodies
	// (httpapi.NewBodyBudget), shared with the REST API: a running
	// invocation holds its payload's bytes there. nil: no such budget.
	BodyBudget *budget.Budget
	// WriteTimeout bounds the sending of one message; a client that does
	// not read for that long is disconnected. 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings a client; one that does
	// not answer within the interval is disconnected. 0 means
	// DefaultPingInterval.
	PingInterval time.Duration
	// ReadTimeout and IdleTimeout bound reading an upgrade request and
	// the wait of a kept-alive connection for one; an upgraded connection
	// is bounded by WriteTimeout and PingInterval instead. 0 is no bound.
	ReadTimeout, IdleTimeout time.Duration
	// SessionsPerOwner bounds the sessions one owner has open at once;
	// one more upgrade is refused with 429. 0 means
	// DefaultSessionsPerOwner.
	SessionsPerOwner int
	// ChannelBufferBytes bounds the bytes written into all stream channels
	// and not yet read, ChannelBufferPerOwnerBytes one owner's share; a
	// write past either aborts its stream (S218, saying which bound). 0
	// means the defaults.
	ChannelBufferBytes, ChannelBufferPerOwnerBytes int64
}

// Server is the engine WebSocket transport over a function table.
type Server struct {
	table    *functions.Table
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	guarded  http.Handler // mux behind Options.Guard
	workers  *workers
	channels *channels
	// invocations is the budget of invocations running (issue 38).
	invocations *budget.Budget

	// ctx is the base of every session and of fire-and-forget invocations;
	// Shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// The fields below are guarded by mu.
	closed bool
	srv    *http.Server
	// sessions counts the open sessions per owner.
	sessions map[string]int
	// live are the open sessions, with their owners.
	live map[*session]string
	// active counts connection handlers and fire-and-forget invocations;
	// Add is called only under mu while !closed.
	active sync.WaitGroup
}

// New returns the transport over table.
func New(table *functions.Table, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.MaxMessageBytes = positiveOr(opts.MaxMessageBytes, DefaultMaxMessageBytes)
	opts.MaxInFlight = positiveOr(opts.MaxInFlight, DefaultMaxInFlight)
	opts.MaxInvocations = positiveOr(opts.MaxInvocations, DefaultMaxInvocations)                         // issue 38
	opts.MaxInvocationsPerOwner = positiveOr(opts.MaxInvocationsPerOwner, DefaultMaxInvocationsPerOwner) // issue 38
	opts.WriteTimeout = positiveOr(opts.WriteTimeout, DefaultWriteTimeout)
	opts.PingInterval = positiveOr(opts.PingInterval, DefaultPingInterval)
	opts.SessionsPerOwner = positiveOr(opts.SessionsPerOwner, DefaultSessionsPerOwner)
	opts.ChannelBufferBytes = positiveOr(opts.ChannelBufferBytes, DefaultChannelBufferBytes)
	opts.ChannelBufferPerOwnerBytes = positiveOr(opts.ChannelBufferPerOwnerBytes, DefaultChannelBufferPerOwnerBytes)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		table:    table,
		opts:     opts,
		log:      opts.Logger,
		workers:  newWorkers(),
		channels: newChannels(newBudget(opts.ChannelBufferBytes, opts.ChannelBufferPerOwnerBytes)),
		ctx:      ctx,
		cancel:   cancel,
		sessions: map[string]int{},
		live:     map[*session]string{},
	}
	s.invocations = newInvocationBudget(opts.MaxInvocations, opts.MaxInvocationsPerOwner) // issue 38
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/{$}", s.authorized(s.serveSession))
	s.mux.HandleFunc("/otel", s.authorized(s.serveTelemetry))
	s.mux.HandleFunc("/ws/channels/{id}", s.serveChannel)
	s.guarded = opts.Guard.Wrap(s.mux)
	return s
}

// ServeHTTP serves the transport's paths to requests the guard lets
// through; it answers the others 403 before any upgrade.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.guarded.ServeHTTP(w, r)
}

// authorized checks the bearer token, when tokens are configured, and
// runs h acting for the token's owner.
func (s *Server) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		owner, err := s.opts.Auth.Owner(r)
		if err != nil {
			if errors.Is(err, auth.ErrMissing) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hutch"`)
			}
			http.Error(w, err.Error()+" (the engine WebSocket takes Authorization: Bearer <token> on the upgrade request)", auth.Status(err))
			return
		}
		h(w, r.WithContext(auth.WithOwner(r.Context(), owner)))
	}
}

// Serve accepts connections on ln until Shutdown. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	if s.srv == nil {
		header := 10 * time.Second
		if s.opts.ReadTimeout > 0 {
			header = min(header, s.opts.ReadTimeout)
		}
		s.srv = &http.Server{Handler: s, ReadHeaderTimeout: header,
			ReadTimeout: s.opts.ReadTimeout, WriteTimeout: s.opts.WriteTimeout, IdleTimeout: s.opts.IdleTimeout}
	}
	srv := s.srv
	s.mu.Unlock()
	return srv.Serve(ln)
}

// Shutdown stops accepting connections, closes every session (their
// invocations are cancelled) and channel, and waits for the handlers and
// fire-and-forget invocations to end or ctx to expire.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	s.cancel()
	s.channels.closeAll()
	done := make(chan struct{})
	go func() {
		s.active.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// track registers one unit of work that Shutdown waits for; it reports
// false once the server is shutting down.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// accept upgrades the request to a WebSocket, or answers 503 when the
// server is shutting down. The caller must call s.active.Done() when it
// gets a connection.
func (s *Server) accept(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	if !s.track() {
		http.Error(w, "hutch is shutting down", http.StatusServiceUnavailable)
		return nil
	}
	// ServeHTTP's guard has checked Host and Origin, with the daemon's
	// allowed_hosts and allowed_origins: the library's own check (Origin
	// host equal to Host) would pass a DNS-rebound page and refuse an
	// allowed one.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.active.Done()
		s.log.Debug("engine websocket upgrade refused", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		return nil
	}
	return conn
}

// serveTelemetry accepts the SDK's /otel socket and drops what it sends,
// so the SDK does not retry it forever.
func (s *Server) serveTelemetry(w http.ResponseWriter, r *http.Request) {
	conn := s.accept(w, r)
	if conn == nil {
		return
	}
	defer s.active.Done()
	conn.SetReadLimit(-1)
	stop := context.AfterFunc(s.ctx, func() { conn.Close(websocket.StatusGoingAway, "hutch is shutting down") })
	defer stop()
	for {
		_, rd, err := conn.Reader(context.Background())
		if err != nil {
			conn.CloseNow()
			return
		}
		if _, err := drain(rd); err != nil {
			conn.CloseNow()
			return
		}
	}
}

// positiveOr returns v, or def when v is not positive (an unset option).
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
