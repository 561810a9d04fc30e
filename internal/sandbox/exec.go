package sandbox

import (
	"context"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Exec runs one command in a sandbox and returns its output. A timeout is
// a normal result with TimedOut set and the output captured so far; the
// function table turns it into S200 for the contract's callers.
func (m *Manager) Exec(ctx context.Context, req api.ExecRequest) (result api.ExecResponse, err error) {
	ctx, done := m.traceExec(ctx, req)
	defer func() { done(result, err) }()
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
	sb, release, err := m.acquire(ctx, req.SandboxID, useExec)
	if err != nil {
		return api.ExecResponse{}, err
	}
	defer release()

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
	resp, err := sb.client().Exec(ctx, areq)
	elapsed := time.Since(start)
	if err != nil {
		if refused := spawnRefused(sb.rec.ID, err); refused != nil {
			return api.ExecResponse{}, refused
		}
		return api.ExecResponse{}, m.agentFailure(ctx, sb, "the exec", err)
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
