package sandbox

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Exec runs one command in a sandbox and returns its output. A timeout is
// a normal result with TimedOut set and the output captured so far; the
// function table turns it into S200 for the contract's callers.
func (m *Manager) Exec(ctx context.Context, req api.ExecRequest) (result api.ExecResponse, err error) {
	ctx, done := m.traceExec(ctx, req)
	defer func() { done(result, err) }()
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.ExecResponse{}, err
	}
	argv, err := commandArgv(req.Cmd, req.Args, req.Argv)
	if err != nil {
		return api.ExecResponse{}, err
	}
	stdin, err := decodeStdin(req.Stdin)
	if err != nil {
		return api.ExecResponse{}, err
	}
	if err := validateEnv("env", req.Env); err != nil {
		return api.ExecResponse{}, err
	}
	if err := validateWorkdir(req.Workdir); err != nil {
		return api.ExecResponse{}, err
	}
	if stopped, reason := sb.stopState(); stopped {
		return api.ExecResponse{}, stoppedError(sb.rec.ID, reason)
	}
	select {
	case sb.slots <- struct{}{}:
	default:
		return api.ExecResponse{}, errdefs.New(errdefs.CodeExecBusy, "sandbox %s already has %d execs in flight (max_concurrent_exec_per_sandbox=%d)", sb.rec.ID, cap(sb.slots), cap(sb.slots)).
			WithFix(nil, "wait for an exec to finish, or run long-lived processes detached")
	}
	defer func() { <-sb.slots }()
	release, err := m.acquireExec(sb.rec.Owner)
	if err != nil {
		return api.ExecResponse{}, err
	}
	defer release()
	sb.touch()
	defer sb.touch()

	timeout := req.TimeoutMs
	if timeout == 0 {
		timeout = m.cfg.DefaultExecTimeoutMs
	}
	timeout = min(timeout, m.cfg.MaxExecTimeoutMs)
	workdir := req.Workdir
	if workdir == "" {
		workdir = sb.image.Config.WorkingDir
	}
	areq := &agentv1.ExecRequest{
		Argv:           argv,
		Env:            sb.baseEnv,
		Workdir:        workdir,
		Stdin:          stdin,
		TimeoutMs:      int64(timeout),
		MaxOutputBytes: m.cfg.MaxOutputBytes,
	}
	if len(req.Env) > 0 {
		areq.Env = mergeEnv(sb.baseEnv, req.Env)
	}
	applyUser(areq, sb.user)
	start := time.Now()
	resp, err := sb.agent.Exec(ctx, areq)
	elapsed := time.Since(start)
	if err != nil {
		if refused := spawnRefused(sb.rec.ID, err); refused != nil {
			return api.ExecResponse{}, refused
		}
		return api.ExecResponse{}, m.execFailure(ctx, sb, err)
	}
	m.log.Debug("exec", "sandbox", sb.rec.ID, "argv0", argv[0], "total_us", elapsed.Microseconds(),
		"agent_us", resp.DurationUs, "spawn_us", resp.SpawnUs, "exit", resp.ExitCode)
	out := api.ExecResponse{
		Stdout:          strings.ToValidUTF8(string(resp.Stdout), "\uFFFD"),
		Stderr:          strings.ToValidUTF8(string(resp.Stderr), "\uFFFD"),
		TimedOut:        resp.TimedOut,
		DurationMs:      uint64(elapsed.Milliseconds()),
		StdoutTruncated: resp.StdoutTruncated,
		StderrTruncated: resp.StderrTruncated,
		TimeoutMs:       timeout,
	}
	if resp.Exited && !resp.TimedOut {
		code := int(resp.ExitCode)
		out.ExitCode = &code
		out.Success = code == 0
	}
	return out, nil
}

// execFailure explains an exec whose agent call failed: the caller went
// away, the sandbox ended under it (say so, with the reason), or the agent
// misbehaved (then the sandbox is ended, since it cannot be trusted).
func (m *Manager) execFailure(ctx context.Context, sb *sandbox, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The sandbox may be ending right now; give it a moment, to say why.
	select {
	case <-sb.inst.Done():
		m.stopAsync(sb, endReason(sb))
		_, reason := sb.stopState()
		return errdefs.New(errdefs.CodeStopped, "sandbox %s stopped during the exec: %s", sb.rec.ID, reason)
	case <-time.After(2 * time.Second):
	}
	if stopped, reason := sb.stopState(); stopped {
		return errdefs.New(errdefs.CodeStopped, "sandbox %s stopped during the exec: %s", sb.rec.ID, reason)
	}
	reason := "the sandbox agent failed: " + safetext.Line(err.Error(), safetext.MaxLine)
	var na *agentclient.NoAnswerError
	if errors.As(err, &na) {
		reason = na.Error()
	}
	m.stopAsync(sb, reason)
	return errdefs.New(errdefs.CodeStopped, "sandbox %s was stopped: %s", sb.rec.ID, reason)
}

// stoppedError is S004 with the stop reason.
func stoppedError(id, reason string) error {
	if reason == "" {
		reason = "stopped"
	}
	return errdefs.New(errdefs.CodeStopped, "sandbox %s is stopped: %s", id, reason).
		WithFix(nil, "create a new sandbox")
}
