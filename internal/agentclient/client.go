// Package agentclient is the daemon's side of the RPC to hutch-agent: a yamux
// client session on a sandbox's byte stream, and one gRPC connection over one
// stream of it. The agent runs inside the sandbox and is not trusted: every
// call has a deadline, answers are size-bounded, and a dead session fails
// calls at once instead of stalling them.
package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// ErrClosed is returned by calls made after Close, or after the session to
// the agent ended (the sandbox exited or closed its stream).
var ErrClosed = errors.New("agent connection closed")

// ProtocolError is why a session ended that the sandbox's side used in a
// way the agent never does: code in the sandbox writing its own frames into
// the agent's stream. It is also ErrClosed.
type ProtocolError struct{ What string }

func (e *ProtocolError) Error() string { return "the sandbox broke the agent protocol: " + e.What }

// Is makes a ProtocolError match ErrClosed: the session is over.
func (e *ProtocolError) Is(target error) bool { return target == ErrClosed }

// errStreamOpened ends a session whose sandbox side opened a stream: the
// host opens every stream, so the agent never does.
var errStreamOpened = &ProtocolError{What: "it opened a stream"}

// NoAnswerError is a call the agent did not answer within the call's own
// deadline (not one of the caller's context): a stuck or stopped agent. It
// is not context.DeadlineExceeded, which says the caller gave up.
type NoAnswerError struct{ After time.Duration }

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("the agent did not answer within %s", seconds(e.After))
}

// seconds renders d in whole seconds ("10 s"), or as Go does below one.
func seconds(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
}

// MaxRequestBytes is the largest request the agent accepts; an exec's stdin
// travels in its request.
const MaxRequestBytes = agentv1.MaxRequestBytes

// Defaults of Options.
const (
	DefaultMaxOutputBytes  = agentv1.DefaultMaxOutputBytes
	DefaultCallTimeout     = 10 * time.Second
	DefaultExecGrace       = 5 * time.Second
	DefaultMaxExecDuration = time.Hour
)

// Options bound what a Client asks for and accepts. Zero values mean the
// defaults above.
type Options struct {
	// MaxOutputBytes caps each of an exec's stdout and stderr. Requests for
	// more, or for the agent's own default, are lowered to it, and answers
	// larger than it are cut to it and flagged truncated.
	MaxOutputBytes int64
	// CallTimeout bounds Info, and WaitReady when its ctx has no deadline.
	CallTimeout time.Duration
	// ExecGrace is added to an exec's timeout_ms to make the call's deadline,
	// leaving the agent time to kill the process and answer.
	ExecGrace time.Duration
	// MaxExecDuration bounds an exec whose request has no timeout_ms.
	MaxExecDuration time.Duration
	// Logger receives the session's diagnostics; nil discards them.
	Logger *slog.Logger
	// FsUser is the user every Fs call runs as in the sandbox (the image's
	// user); nil runs them as the agent, root.
	FsUser *agentv1.FsUser
}

func (o Options) withDefaults() Options {
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ExecGrace <= 0 {
		o.ExecGrace = DefaultExecGrace
	}
	if o.MaxExecDuration <= 0 {
		o.MaxExecDuration = DefaultMaxExecDuration
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Client calls one agent. It is safe for concurrent use.
type Client struct {
	opts Options
	sess *yamux.Session
	cc   *grpc.ClientConn
	rpc  agentv1.AgentClient

	// life ends when the session dies or on Close, with cause ErrClosed,
	// or a *ProtocolError when the sandbox's side broke the protocol.
	life context.Context
	end  context.CancelCauseFunc

	closeOnce sync.Once
	closeErr  error
}

// Dial starts a yamux client session on conn, the byte stream to the agent,
// and a gRPC connection over one stream of it. It does not wait for the
// agent: the handshake starts at once and completes when the agent is up
// (see WaitReady). The Client owns conn and closes it. A stream opened from
// the sandbox's side ends the session (see Err).
func Dial(conn io.ReadWriteCloser, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	life, end := context.WithCancelCause(context.Background())
	guard := &pingGuard{ReadWriteCloser: conn, over: func() {
		opts.Logger.Warn("the sandbox sent more yamux pings than allowed; ending its session", "max", MaxPings)
		end(errTooManyPings)
	}}
	sess, err := yamux.Client(agentv1.CoalesceFrames(guard), agentv1.SessionConfig(opts.Logger))
	if err != nil {
		end(ErrClosed)
		conn.Close()
		return nil, fmt.Errorf("starting yamux session: %w", err)
	}
	cc, err := grpc.NewClient("passthrough:///hutch-agent",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			return sess.Open()
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(int(2*opts.MaxOutputBytes+1<<20)),
			grpc.MaxCallSendMsgSize(MaxRequestBytes),
			grpc.ForceCodecV2(agentv1.Codec),
		),
		grpc.WithDisableServiceConfig(),
		grpc.WithChainUnaryInterceptor(fsUserUnary(opts.FsUser)),
		grpc.WithChainStreamInterceptor(fsUserStream(opts.FsUser)),
		grpc.WithInitialWindowSize(agentv1.WindowBytes),
		grpc.WithInitialConnWindowSize(agentv1.WindowBytes),
		grpc.WithWriteBufferSize(agentv1.BufferBytes),
		experimental.WithBufferPool(agentv1.Pool),
		// Keep the one connection for the life of the sandbox.
		grpc.WithIdleTimeout(0),
		// A failed attempt means the agent is late or the session is gone
		// (which ends every call anyway): retry fast. An attempt itself is
		// not cut short: the first one's handshake completes when the agent
		// is up, however long its boot (a microVM under TCG on a busy
		// machine: over 20 s), and the caller's context bounds the wait; a
		// second attempt on the session, after gRPC gave up on the first,
		// was answered by EOF.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  2 * time.Millisecond,
				Multiplier: 2,
				Jitter:     0.2,
				MaxDelay:   100 * time.Millisecond,
			},
			MinConnectTimeout: time.Hour,
		}),
	)
	if err != nil {
		end(ErrClosed)
		sess.Close()
		return nil, fmt.Errorf("creating grpc client: %w", err)
	}
	c := &Client{
		opts: opts,
		sess: sess,
		cc:   cc,
		rpc:  agentv1.NewAgentClient(cc),
		life: life,
		end:  end,
	}
	go func() {
		<-sess.CloseChan()
		end(ErrClosed)
	}()
	go c.refuseStreams()
	// Send the HTTP/2 preface now: the handshake overlaps the agent's boot.
	cc.Connect()
	return c, nil
}

// WaitReady returns once the agent answers Info, or with an error when ctx
// ends first (without a deadline, after Options.CallTimeout) or the session
// dies. It blocks on a single call, which the agent answers as soon as it
// serves; there is no polling interval to wait out.
func (c *Client) WaitReady(ctx context.Context) error {
	timeout := c.opts.CallTimeout
	if _, ok := ctx.Deadline(); ok {
		timeout = 0
	}
	start := time.Now()
	_, err := c.info(ctx, timeout, grpc.WaitForReady(true))
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = &NoAnswerError{After: time.Since(start)}
	}
	if err != nil {
		return fmt.Errorf("waiting for the agent: %w", err)
	}
	return nil
}

// Info asks the agent for its version, pid and uptime.
func (c *Client) Info(ctx context.Context) (*agentv1.InfoResponse, error) {
	resp, err := c.info(ctx, c.opts.CallTimeout)
	if err != nil {
		return nil, fmt.Errorf("agent info: %w", err)
	}
	return resp, nil
}

func (c *Client) info(ctx context.Context, timeout time.Duration, opts ...grpc.CallOption) (*agentv1.InfoResponse, error) {
	ctx, cancel, err := c.call(ctx, timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	resp, err := c.rpc.Info(ctx, &agentv1.InfoRequest{}, opts...)
	return resp, c.callError(ctx, err)
}

// Done is closed when the session to the agent has ended: the sandbox
// exited or closed its stream, broke the protocol, or Close was called.
func (c *Client) Done() <-chan struct{} { return c.life.Done() }

// Err is nil while the session lives, then why it ended: a *ProtocolError
// when the sandbox's side broke the protocol, ErrClosed otherwise.
func (c *Client) Err() error { return context.Cause(c.life) }

// refuseStreams ends the session at the first stream the sandbox's side
// opens: the agent never opens one, and a stream nobody reads would hold
// up to its window of the daemon's memory. Until then, what the sandbox can
// make the session buffer is bounded by agentv1.AcceptBacklog streams.
func (c *Client) refuseStreams() {
	st, err := c.sess.AcceptStream()
	if err != nil {
		return // the session ended
	}
	c.opts.Logger.Warn("the sandbox opened a stream toward the daemon; ending its session", "stream", st.StreamID())
	c.end(errStreamOpened)
	c.Close()
}

// Close ends the gRPC connection and the session, and closes the stream.
// It is idempotent; calls in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.end(ErrClosed)
		c.closeErr = errors.Join(c.cc.Close(), c.sess.Close())
	})
	return c.closeErr
}

// call derives the context of one call from ctx: bounded by timeout (none
// when 0; reaching it is a NoAnswerError) and cancelled with the session's
// end (Err) when the session ends. It fails at once when the session has
// already ended.
func (c *Client) call(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if err := c.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life, func() { cancelCause(c.Err()) })
	cancelTimeout := context.CancelFunc(func() {})
	if timeout > 0 {
		na := &NoAnswerError{After: timeout}
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > timeout {
			// The agent, which learns the deadline, may end the call first.
			ctx = context.WithValue(ctx, noAnswerKey{}, na)
		}
		ctx, cancelTimeout = context.WithTimeoutCause(ctx, timeout, na)
	}
	return ctx, func() {
		cancelTimeout()
		stop()
		cancelCause(context.Canceled)
	}, nil
}

// callError reports a call's failure as the session's end (Err) when the
// session ended under it, as a NoAnswerError when the call's own deadline
// passed, and as the gRPC error otherwise.
func (c *Client) callError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if end := c.ended(); end != nil {
		return end
	}
	var na *NoAnswerError
	if errors.As(context.Cause(ctx), &na) {
		return na
	}
	if na, ok := ctx.Value(noAnswerKey{}).(*NoAnswerError); ok && status.Code(err) == codes.DeadlineExceeded {
		return na
	}
	return err
}

// noAnswerKey marks the context of a call whose deadline is its own.
type noAnswerKey struct{}

// ended is Err once the session is closed, and nil before. A call can
// fail on the session's end a moment before life records it: waiting for
// life then gives every such call the same error.
func (c *Client) ended() error {
	if !c.sess.IsClosed() {
		return c.Err()
	}
	<-c.life.Done()
	return c.Err()
}

// violate ends the session because the sandbox's side broke the protocol
// (what says how), and returns the *ProtocolError.
func (c *Client) violate(what string) error {
	c.end(&ProtocolError{What: what})
	c.Close()
	return c.Err()
}
