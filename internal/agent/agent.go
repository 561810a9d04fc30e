// Package agent implements the services of hutch-agent, the process that runs
// as PID 1 inside every sandbox: it serves the Agent gRPC service over a
// yamux session on one byte stream, runs processes for the daemon (a table
// of processes that outlive the calls that started them) and reaps every
// orphan in the sandbox.
//
// Everything here runs on the sandbox's side of the wall. The daemon talks to
// it through package agentclient and trusts none of its answers.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// MaxRequestBytes is the largest request message the agent accepts (a
// start's stdin is carried in its request), as agentclient sends.
const MaxRequestBytes = agentv1.MaxRequestBytes

// processStart approximates the agent's start for InfoResponse.uptime_ns.
var processStart = time.Now()

// Options configure a Server.
type Options struct {
	// Version is reported by Info.
	Version string
	// ReapOrphans makes this process reap every child it has, its own and the
	// orphans re-parented to it, with one wait4(-1) loop; when it is not PID 1
	// it becomes a child subreaper first. hutch-agent sets it. Leave it unset
	// when the agent is embedded in a process that waits for children of its
	// own (os/exec): execs then wait for their own pid only.
	ReapOrphans bool
	// Logger receives the agent's few diagnostics; nil discards them.
	Logger *slog.Logger
	// Reattach keeps the agent serving when its host's session ends while
	// the stream still works: ServeLink waits for a relink (issue 35).
	Reattach bool
}

// Server implements agentv1.AgentServer.
type Server struct {
	agentv1.UnimplementedAgentServer

	version  string
	log      *slog.Logger
	procs    *table
	reattach bool
}

var _ agentv1.AgentServer = (*Server)(nil)

// New returns a Server. With opts.ReapOrphans it starts the process's orphan
// reaper, once per process.
func New(opts Options) (*Server, error) {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReapOrphans {
		if err := reapOrphans(); err != nil {
			return nil, err
		}
	}
	return &Server{version: opts.Version, log: opts.Logger, procs: newTable(agentv1.MaxProcesses), reattach: opts.Reattach}, nil
}

// Info reports the agent's version, pid and uptime; the daemon uses it as
// its readiness probe.
func (s *Server) Info(context.Context, *agentv1.InfoRequest) (*agentv1.InfoResponse, error) {
	return &agentv1.InfoResponse{
		Version:  s.version,
		Pid:      int32(os.Getpid()),
		UptimeNs: time.Since(processStart).Nanoseconds(),
	}, nil
}

// Serve runs the Agent service over a yamux server session on conn until
// the session ends (the host closed its end) or ctx is cancelled; both are a
// normal stop and return nil. Serve closes conn. Calls still running are
// cancelled, which kills the processes tied to their streams.
func (s *Server) Serve(ctx context.Context, conn io.ReadWriteCloser) error {
	sess, err := yamux.Server(agentv1.CoalesceFrames(conn), agentv1.SessionConfig(s.log))
	if err != nil {
		conn.Close()
		return fmt.Errorf("starting yamux session: %w", err)
	}
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.InitialWindowSize(agentv1.WindowBytes),
		grpc.InitialConnWindowSize(agentv1.WindowBytes),
		grpc.WriteBufferSize(agentv1.BufferBytes),
		grpc.ReadBufferSize(agentv1.BufferBytes),
		grpc.ForceServerCodecV2(agentv1.Codec),
		experimental.BufferPool(agentv1.Pool),
		// Fs calls run as the user the host names (fsuser.go).
		grpc.ChainUnaryInterceptor(fsUserUnary),
		grpc.ChainStreamInterceptor(fsUserStream),
		// The host never needs to be told off for pinging: enforcement off.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             time.Second,
			PermitWithoutStream: true,
		}),
	)
	agentv1.RegisterAgentServer(gs, s)
	agentv1.RegisterFsServer(gs, &fsServer{})

	served := make(chan error, 1)
	go func() { served <- gs.Serve(sess) }()
	select {
	case <-sess.CloseChan():
	case <-ctx.Done():
	case err = <-served:
	}
	gs.Stop()
	sess.Close()
	if err != nil && !sess.IsClosed() {
		return fmt.Errorf("serving grpc: %w", err)
	}
	return nil
}

// Stdio returns the agent's byte stream: reads come from stdin, writes go to
// the original stdout. It then points file descriptor 1 at stderr, so that
// nothing but the session can ever be written to the stream by accident.
// Call it once, before anything else may write to stdout.
func Stdio() (io.ReadWriteCloser, error) {
	out, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("duplicating stdout: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("pointing stdout at stderr: %w", err)
	}
	return &stdio{r: os.Stdin, w: os.NewFile(uintptr(out), "agent-stream")}, nil
}

// stdio joins the agent's stdin and its private copy of stdout.
type stdio struct {
	r *os.File
	w *os.File
}

func (s *stdio) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *stdio) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *stdio) Close() error                { return errors.Join(s.r.Close(), s.w.Close()) }
