package sandbox

import (
	"context"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/sandbox/tracing"
)

// Exec runs one command in a sandbox and returns its output. A timeout is
// a normal result with TimedOut set and the output captured so far; the
// function table turns it into S200 for the contract's callers.
func (m *Manager) Exec(ctx context.Context, req api.ExecRequest) (result api.ExecResponse, err error) {
	ctx, done := tracing.Exec(ctx, m.trace.obs, m.trace.emit, req)
	defer func() { done(result, err) }()
	sb, release, areq, err := m.prepareExec(ctx, req)
	if err != nil {
		return api.ExecResponse{}, err
	}
	defer release()
	areq.MaxOutputBytes = m.cfg.MaxOutputBytes
	start := time.Now()
	resp, err := sb.client().Exec(ctx, areq)
	elapsed := time.Since(start)
	if err != nil {
		if refused := agenterr.SpawnRefused(sb.rec.ID, err); refused != nil {
			return api.ExecResponse{}, refused
		}
		return api.ExecResponse{}, handle{m: m, sb: sb}.Fail(ctx, "the exec", err)
	}
	m.log.Debug("exec", "sandbox", sb.rec.ID, "argv0", areq.Argv[0], "total_us", elapsed.Microseconds(),
		"agent_us", resp.DurationUs, "spawn_us", resp.SpawnUs, "exit", resp.ExitCode)
	out := api.ExecResponse{
		Stdout:          strings.ToValidUTF8(string(resp.Stdout), "\uFFFD"),
		Stderr:          strings.ToValidUTF8(string(resp.Stderr), "\uFFFD"),
		TimedOut:        resp.TimedOut,
		DurationMs:      uint64(elapsed.Milliseconds()),
		StdoutTruncated: resp.StdoutTruncated,
		StderrTruncated: resp.StderrTruncated,
		OOMKilled:       resp.OomKilled,
		TimeoutMs:       uint64(areq.TimeoutMs),
	}
	if resp.Exited && !resp.TimedOut {
		code := int(resp.ExitCode)
		out.ExitCode = &code
		out.Success = code == 0
	}
	return out, nil
}

// prepareExec checks an exec's request and takes an exec slot of its
// sandbox: the agent's request (without an output cap) and the slot's
// release.
func (m *Manager) prepareExec(ctx context.Context, req api.ExecRequest) (*sandbox, func(), *agentv1.ExecRequest, error) {
	argv, err := spec.CommandArgv(req.Cmd, req.Args, req.Argv)
	if err != nil {
		return nil, nil, nil, err
	}
	stdin, err := spec.DecodeStdin(req.Stdin)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return nil, nil, nil, err
	}
	if err := spec.ValidateWorkdir(req.Workdir); err != nil {
		return nil, nil, nil, err
	}
	if err := spec.CheckExecTimeout(req.TimeoutMs, m.cfg.MaxExecTimeoutMs); err != nil {
		return nil, nil, nil, err
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseExec)
	if err != nil {
		return nil, nil, nil, err
	}
	areq, err := sb.execRequest(argv, req.Env, req.Workdir, stdin, spec.ExecTimeout(req.TimeoutMs, m.cfg.DefaultExecTimeoutMs, m.cfg.MaxExecTimeoutMs), "")
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	m.emitFor(sb, api.EventExecStarted, map[string]any{"command": argv[0]})
	return sb, release, areq, nil
}

// execRequest is the agent's request for a command of sb: the sandbox's
// env and workdir under the request's, its user or the one named, and the
// timeout given (0: none, for a background process).
func (sb *sandbox) execRequest(argv []string, env api.Env, workdir string, stdin []byte, timeoutMs uint64, user string) (*agentv1.ExecRequest, error) {
	if workdir == "" {
		workdir = sb.image.Config.WorkingDir
	}
	areq := &agentv1.ExecRequest{
		Argv:      argv,
		Env:       sb.env(),
		Workdir:   workdir,
		Stdin:     stdin,
		TimeoutMs: int64(timeoutMs),
	}
	if len(env) > 0 {
		areq.Env = spec.MergeEnv(areq.Env, env)
	}
	u := sb.user
	if user != "" {
		var err error
		if u, err = spec.NamedUser(sb.image, user); err != nil {
			return nil, err
		}
	}
	spec.ApplyUser(areq, u)
	return areq, nil
}
