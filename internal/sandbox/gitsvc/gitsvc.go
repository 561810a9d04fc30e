// Package gitsvc is sandbox::git::*: git run inside a sandbox by the
// agent's exec, one argument vector at a time (internal/gitcmd builds,
// checks and parses them; nothing goes through a shell), under one exec
// slot for the whole operation and one deadline. Credentials reach git in
// the environment of the one exec that talks to the remote, scoped in
// git's config to the URLs the caller named (credentials_for); the events
// and logs of an exec name only "git" and the operation. It reaches a
// sandbox only through sandbox.Sandboxes.
package gitsvc

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/gitcmd"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Service answers sandbox::git::* (functions.Git).
type Service struct {
	sbs sandbox.Sandboxes
	// maxOutput is the daemon's max_output_bytes.
	maxOutput int64
	log       *slog.Logger
}

// New is the git service over sbs; maxOutputBytes is the daemon's
// max_output_bytes (a diff's cap).
func New(sbs sandbox.Sandboxes, maxOutputBytes int64, log *slog.Logger) *Service {
	return &Service{sbs: sbs, maxOutput: maxOutputBytes, log: log}
}

// gitCall is one git operation in a sandbox.
type gitCall struct {
	s   *Service
	ctx context.Context
	sb  sandbox.Handle
	op  string
	// dir is the repository's directory; user and env as the request
	// gave them.
	dir       string
	user      string
	env       api.Env
	timeoutMs uint64
	deadline  time.Time
}

// begin checks t and takes an exec slot of its sandbox for operation
// op: the call and its release.
func (s *Service) begin(ctx context.Context, op string, t api.GitTarget) (*gitCall, func(), error) {
	if t.Path != "" {
		if err := gitcmd.CheckRepoPath(t.Path); err != nil {
			return nil, nil, err
		}
	}
	if err := spec.ValidateEnv("env", t.Env); err != nil {
		return nil, nil, err
	}
	sb, release, err := s.sbs.Acquire(ctx, t.SandboxID, sandbox.UseExec)
	if err != nil {
		return nil, nil, err
	}
	g := &gitCall{s: s, ctx: ctx, sb: sb, op: op, dir: t.Path, user: t.User, env: t.Env, timeoutMs: sb.ExecTimeout(t.TimeoutMs)}
	if g.dir == "" {
		g.dir = sb.Workdir()
	}
	if home := sb.Home(t.User); home != "" {
		// git reads (and config --global writes) the user's own config.
		g.env = spec.MergeEnv([]string{"HOME=" + home}, t.Env)
	}
	g.deadline = time.Now().Add(time.Duration(g.timeoutMs) * time.Millisecond)
	return g, release, nil
}

// run runs c and returns how git ended; an error is hutch's (the agent,
// the deadline), not git's.
func (g *gitCall) run(c gitcmd.Cmd) (gitcmd.Result, error) {
	left := time.Until(g.deadline).Milliseconds()
	if left <= 0 {
		return gitcmd.Result{}, g.timedOut()
	}
	dir := c.Dir
	if dir == "" {
		dir = g.dir
	}
	resp, err := g.sb.Exec(g.ctx, sandbox.ExecCall{Argv: c.Argv(dir), Env: spec.MergeEnv(g.env, gitcmd.BaseEnv, c.Env), Workdir: "/",
		Stdin: c.Stdin, TimeoutMs: uint64(left), User: g.user, MaxOutputBytes: int64(c.MaxOutput),
		Op: "git " + g.op, Started: map[string]any{"command": "git", "git": g.op}})
	if err != nil {
		return gitcmd.Result{}, err
	}
	code := int(resp.ExitCode)
	g.s.log.Debug("git", "sandbox", g.sb.ID(), "op", g.op, "exit", code, "timed_out", resp.TimedOut)
	if resp.TimedOut || !resp.Exited {
		return gitcmd.Result{}, g.timedOut()
	}
	return gitcmd.Result{Stdout: resp.Stdout, Stderr: strings.ToValidUTF8(string(resp.Stderr), "\uFFFD"), ExitCode: code, StdoutCut: resp.StdoutTruncated}, nil
}

// timedOut is S200 for the operation.
func (g *gitCall) timedOut() error {
	return errdefs.New(errdefs.CodeExecTimeout, "git %s timed out after %dms", g.op, g.timeoutMs).
		WithFix(map[string]any{"timeout_ms": g.timeoutMs * 2}, "raise timeout_ms")
}

// ok runs c and maps a failure of git to its S-code.
func (g *gitCall) ok(c gitcmd.Cmd) (gitcmd.Result, error) {
	r, err := g.run(c)
	if err == nil && r.ExitCode != 0 {
		err = g.failure(r)
	}
	return r, err
}

// failure is gitcmd.Failure, whose S242 (no git) names the images that
// have git.
func (g *gitCall) failure(r gitcmd.Result) error {
	err := gitcmd.Failure(g.op, r)
	if e := errdefs.As(err); e.Code == errdefs.CodeNoInterpreter {
		e.FixNote = g.sb.Fix("git")
		return e
	}
	return err
}

// status is the repository's status.
func (g *gitCall) status() (api.GitStatus, error) {
	r, err := g.ok(gitcmd.Status())
	if err != nil {
		return api.GitStatus{}, err
	}
	return gitcmd.ParseStatus(r.Stdout, r.StdoutCut)
}

// then runs c, and answers the status after it.
func (g *gitCall) then(c gitcmd.Cmd) (api.GitStatus, error) {
	if _, err := g.ok(c); err != nil {
		return api.GitStatus{}, err
	}
	return g.status()
}

// checkLocal refuses a local remote that does not exist in the sandbox.
func (g *gitCall) checkLocal(r gitcmd.Remote) error {
	if r.LocalPath == "" {
		return nil
	}
	if g.sb.PathMissing(g.ctx, r.LocalPath) {
		return errdefs.New(errdefs.CodeGitNoRemote, "no repository at %s in the sandbox", clip(r.LocalPath, 256)).
			WithFix(nil, "give the absolute path of a repository in the sandbox, or a URL")
	}
	return nil
}

// gitDo takes the sandbox of t for operation op and runs fn on it.
// Requests are checked before (the builders of gitcmd), so that a bad
// one takes no exec slot.
func gitDo[Resp any](ctx context.Context, s *Service, op string, t api.GitTarget, fn func(g *gitCall) (Resp, error)) (Resp, error) {
	g, release, err := s.begin(ctx, op, t)
	if err != nil {
		var zero Resp
		return zero, err
	}
	defer release()
	return fn(g)
}

// GitInit runs sandbox::git::init.
func (s *Service) GitInit(ctx context.Context, req api.GitInitRequest) (api.GitInitResponse, error) {
	if _, err := gitcmd.Init(req, "/"); err != nil {
		return api.GitInitResponse{}, err
	}
	return gitDo(ctx, s, "init", req.GitTarget, func(g *gitCall) (api.GitInitResponse, error) {
		c, _ := gitcmd.Init(req, g.dir) // checked above
		_, err := g.ok(c)
		return api.GitInitResponse{Path: g.dir, Bare: req.Bare}, err
	})
}

// GitClone runs sandbox::git::clone.
func (s *Service) GitClone(ctx context.Context, req api.GitCloneRequest) (api.GitCloneResponse, error) {
	remote, err := gitcmd.ParseRemoteURL("url", req.URL)
	if err != nil {
		return api.GitCloneResponse{}, err
	}
	creds, err := gitcmd.Creds(req.GitAuth, &remote)
	if err != nil {
		return api.GitCloneResponse{}, err
	}
	if _, err := gitcmd.Clone(req, remote, creds, "/"); err != nil {
		return api.GitCloneResponse{}, err
	}
	return gitDo(ctx, s, "clone", req.GitTarget, func(g *gitCall) (api.GitCloneResponse, error) {
		if req.Path == "" {
			g.dir = gitcmd.CloneDir(g.dir, remote.URL)
		}
		if err := g.checkLocal(remote); err != nil {
			return api.GitCloneResponse{}, err
		}
		c, _ := gitcmd.Clone(req, remote, creds, g.dir) // checked above
		st, err := g.then(c)
		if err != nil {
			return api.GitCloneResponse{}, err
		}
		return api.GitCloneResponse{Path: g.dir, URL: remote.URL, Branch: st.Branch, Commit: st.Commit}, nil
	})
}

// GitStatus runs sandbox::git::status.
func (s *Service) GitStatus(ctx context.Context, req api.GitStatusRequest) (api.GitStatus, error) {
	return gitDo(ctx, s, "status", req.GitTarget, (*gitCall).status)
}

// GitAdd runs sandbox::git::add.
func (s *Service) GitAdd(ctx context.Context, req api.GitAddRequest) (api.GitStatus, error) {
	return gitChange(ctx, s, "add", req.GitTarget, func() (gitcmd.Cmd, error) { return gitcmd.Add(req.Paths) })
}

// GitCheckout runs sandbox::git::checkout.
func (s *Service) GitCheckout(ctx context.Context, req api.GitCheckoutRequest) (api.GitStatus, error) {
	return gitChange(ctx, s, "checkout", req.GitTarget, func() (gitcmd.Cmd, error) { return gitcmd.Checkout(req) })
}

// GitReset runs sandbox::git::reset.
func (s *Service) GitReset(ctx context.Context, req api.GitResetRequest) (api.GitStatus, error) {
	return gitChange(ctx, s, "reset", req.GitTarget, func() (gitcmd.Cmd, error) { return gitcmd.Reset(req) })
}

// GitRestore runs sandbox::git::restore.
func (s *Service) GitRestore(ctx context.Context, req api.GitRestoreRequest) (api.GitStatus, error) {
	return gitChange(ctx, s, "restore", req.GitTarget, func() (gitcmd.Cmd, error) { return gitcmd.Restore(req) })
}

// gitChange runs the command of build and answers the status after it.
func gitChange(ctx context.Context, s *Service, op string, t api.GitTarget, build func() (gitcmd.Cmd, error)) (api.GitStatus, error) {
	c, err := build()
	if err != nil {
		return api.GitStatus{}, err
	}
	return gitDo(ctx, s, op, t, func(g *gitCall) (api.GitStatus, error) { return g.then(c) })
}

// GitCommit runs sandbox::git::commit.
func (s *Service) GitCommit(ctx context.Context, req api.GitCommitRequest) (api.GitCommitResponse, error) {
	c, err := gitcmd.Commit(req)
	if err != nil {
		return api.GitCommitResponse{}, err
	}
	return gitDo(ctx, s, "commit", req.GitTarget, func(g *gitCall) (api.GitCommitResponse, error) {
		if _, err := g.ok(c); err != nil {
			return api.GitCommitResponse{}, err
		}
		r, err := g.ok(gitcmd.LastCommit())
		if err != nil {
			return api.GitCommitResponse{}, err
		}
		commits, err := gitcmd.ParseLog(r.Stdout, false)
		if err != nil || len(commits) == 0 {
			return api.GitCommitResponse{}, errdefs.New(errdefs.CodeInternal, "git commit: reading the new commit: %v", err)
		}
		return api.GitCommitResponse{Commit: commits[0]}, nil
	})
}

// GitDiff runs sandbox::git::diff.
func (s *Service) GitDiff(ctx context.Context, req api.GitDiffRequest) (api.GitDiffResponse, error) {
	maxBytes := req.MaxBytes
	switch {
	case maxBytes < 0:
		return api.GitDiffResponse{}, errdefs.Malformed("max_bytes must not be negative, got %d", maxBytes)
	case maxBytes == 0:
		maxBytes = gitcmd.DefaultDiffBytes
	}
	text, err := gitcmd.Diff(req, int(min(int64(maxBytes), s.maxOutput)))
	if err != nil {
		return api.GitDiffResponse{}, err
	}
	names, _ := gitcmd.DiffNameStatus(req) // the same checks as Diff's
	return gitDo(ctx, s, "diff", req.GitTarget, func(g *gitCall) (api.GitDiffResponse, error) {
		r, err := g.ok(text)
		if err != nil {
			return api.GitDiffResponse{}, err
		}
		out := api.GitDiffResponse{Diff: strings.ToValidUTF8(string(r.Stdout), "\uFFFD"), Truncated: r.StdoutCut}
		if !req.NameStatus {
			return out, nil
		}
		if r, err = g.ok(names); err != nil {
			return api.GitDiffResponse{}, err
		}
		out.Files, err = gitcmd.ParseNameStatus(r.Stdout, r.StdoutCut)
		out.Truncated = out.Truncated || r.StdoutCut
		return out, err
	})
}

// GitLog runs sandbox::git::log.
func (s *Service) GitLog(ctx context.Context, req api.GitLogRequest) (api.GitLogResponse, error) {
	c, err := gitcmd.Log(req)
	if err != nil {
		return api.GitLogResponse{}, err
	}
	return gitDo(ctx, s, "log", req.GitTarget, func(g *gitCall) (api.GitLogResponse, error) {
		r, err := g.run(c)
		switch {
		case err != nil:
			return api.GitLogResponse{}, err
		case r.ExitCode != 0 && req.Ref == "" && strings.Contains(r.Stderr, "does not have any commits yet"):
			return api.GitLogResponse{Commits: []api.GitCommit{}}, nil
		case r.ExitCode != 0:
			return api.GitLogResponse{}, g.failure(r)
		}
		commits, err := gitcmd.ParseLog(r.Stdout, r.StdoutCut)
		return api.GitLogResponse{Commits: commits, Truncated: r.StdoutCut}, err
	})
}

// GitBranch runs sandbox::git::branch.
func (s *Service) GitBranch(ctx context.Context, req api.GitBranchRequest) (api.GitBranchResponse, error) {
	var change *gitcmd.Cmd
	switch {
	case req.Name != "":
		c, err := gitcmd.BranchChange(req)
		if err != nil {
			return api.GitBranchResponse{}, err
		}
		change = &c
	case req.Delete || req.Force || req.StartPoint != "":
		return api.GitBranchResponse{}, errdefs.Malformed("delete, force and start_point go with name")
	}
	return gitDo(ctx, s, "branch", req.GitTarget, func(g *gitCall) (api.GitBranchResponse, error) {
		if change != nil {
			if _, err := g.ok(*change); err != nil {
				return api.GitBranchResponse{}, err
			}
		}
		r, err := g.ok(gitcmd.Branches(req.Remotes))
		if err != nil {
			return api.GitBranchResponse{}, err
		}
		branches, current, err := gitcmd.ParseBranches(r.Stdout)
		return api.GitBranchResponse{Current: current, Branches: branches}, err
	})
}

// GitRemote runs sandbox::git::remote.
func (s *Service) GitRemote(ctx context.Context, req api.GitRemoteRequest) (api.GitRemoteResponse, error) {
	var remote gitcmd.Remote
	switch {
	case req.Name == "" && (req.URL != "" || req.Remove || req.Overwrite):
		return api.GitRemoteResponse{}, errdefs.Malformed("name is required with url, remove or overwrite")
	case req.Name == "":
	case req.Remove && (req.URL != "" || req.Overwrite):
		return api.GitRemoteResponse{}, errdefs.Malformed("remove takes a name only")
	case !req.Remove && req.URL == "":
		return api.GitRemoteResponse{}, errdefs.Malformed("give url to add the remote, or remove to remove it")
	}
	if req.Name != "" {
		if err := gitcmd.CheckRef("name", req.Name); err != nil {
			return api.GitRemoteResponse{}, err
		}
	}
	if req.URL != "" {
		var err error
		if remote, err = gitcmd.ParseRemoteURL("url", req.URL); err != nil {
			return api.GitRemoteResponse{}, err
		}
		if remote.Password != "" {
			return api.GitRemoteResponse{}, gitcmd.PasswordInURL()
		}
	}
	return gitDo(ctx, s, "remote", req.GitTarget, func(g *gitCall) (api.GitRemoteResponse, error) {
		var err error
		switch {
		case req.Remove:
			_, err = g.ok(gitcmd.RemoteRemove(req.Name))
		case req.URL != "":
			err = g.addRemote(req, remote)
		}
		if err != nil {
			return api.GitRemoteResponse{}, err
		}
		r, err := g.run(gitcmd.Remotes())
		switch {
		case err != nil:
			return api.GitRemoteResponse{}, err
		case r.ExitCode == 1 && len(r.Stdout) == 0:
			return api.GitRemoteResponse{Remotes: []api.GitRemote{}}, nil // none
		case r.ExitCode != 0:
			return api.GitRemoteResponse{}, g.failure(r)
		}
		return api.GitRemoteResponse{Remotes: gitcmd.ParseRemotes(r.Stdout)}, nil
	})
}

// addRemote adds the remote of req, or replaces its URL (overwrite).
func (g *gitCall) addRemote(req api.GitRemoteRequest, remote gitcmd.Remote) error {
	if err := g.checkLocal(remote); err != nil {
		return err
	}
	if req.Overwrite {
		r, err := g.run(gitcmd.RemoteAdd(req.Name, req.URL, true))
		switch {
		case err != nil:
			return err
		case r.ExitCode == 0:
			return nil
		case !strings.Contains(strings.ToLower(r.Stderr), "no such remote"):
			return g.failure(r)
		}
	}
	_, err := g.ok(gitcmd.RemoteAdd(req.Name, req.URL, false))
	return err
}

// GitConfig runs sandbox::git::config.
func (s *Service) GitConfig(ctx context.Context, req api.GitConfigRequest) (api.GitConfigResponse, error) {
	c, err := gitcmd.Config(req)
	if err != nil {
		return api.GitConfigResponse{}, err
	}
	get := req.Key != "" && req.Value == nil && !req.Unset
	none := api.GitConfigResponse{Entries: []api.GitConfigEntry{}}
	return gitDo(ctx, s, "config", req.GitTarget, func(g *gitCall) (api.GitConfigResponse, error) {
		r, err := g.run(c)
		switch {
		case err != nil:
			return api.GitConfigResponse{}, err
		case r.ExitCode == 1 && get, r.ExitCode == 5 && req.Unset:
			return none, nil // not set: no values, nothing to remove
		case r.ExitCode != 0:
			return api.GitConfigResponse{}, g.failure(r)
		case req.Key == "":
			return api.GitConfigResponse{Entries: gitcmd.ParseConfig(r.Stdout)}, nil
		case get:
			return api.GitConfigResponse{Entries: gitcmd.ParseValues(req.Key, r.Stdout)}, nil
		case req.Unset:
			return none, nil
		}
		return api.GitConfigResponse{Entries: []api.GitConfigEntry{{Key: req.Key, Value: *req.Value}}}, nil
	})
}

// gitRemote runs a call that talks to a remote (fetch, pull, push): the
// command of build, given the remote's argument for git, with the
// environment that hands git the call's credentials, scoped to
// credentials_for (by default a URL remote's host). A remote given by
// name has its URLs looked up first: one outside credentials_for is
// refused before git talks to it; fn reads its result.
func gitRemote[Resp any](ctx context.Context, s *Service, op string, t api.GitTarget, rc api.GitRemoteCall, push bool,
	build func(remote string) (gitcmd.Cmd, error), fn func(g *gitCall, r gitcmd.Result) (Resp, error)) (Resp, error) {
	var zero Resp
	call, err := gitcmd.ParseRemoteCall(rc)
	if err != nil {
		return zero, err
	}
	c, err := build(call.Arg)
	if err != nil {
		return zero, err
	}
	return gitDo(ctx, s, op, t, func(g *gitCall) (Resp, error) {
		var url string
		switch {
		case call.URL != nil:
			if err := g.checkLocal(*call.URL); err != nil {
				return zero, err
			}
		case call.NeedsURL():
			r, err := g.ok(gitcmd.RemoteURL(call.Name, push))
			if err != nil {
				return zero, err
			}
			url = string(r.Stdout)
		}
		env, err := call.Auth(url)
		if err != nil {
			return zero, err
		}
		c.Env = append(c.Env, env...)
		r, err := g.ok(c)
		if err != nil {
			return zero, err
		}
		return fn(g, r)
	})
}

// statusAfter answers the status after a fetch or pull.
func statusAfter(g *gitCall, _ gitcmd.Result) (api.GitStatus, error) { return g.status() }

// GitFetch runs sandbox::git::fetch.
func (s *Service) GitFetch(ctx context.Context, req api.GitFetchRequest) (api.GitStatus, error) {
	return gitRemote(ctx, s, "fetch", req.GitTarget, req.GitRemoteCall, false,
		func(remote string) (gitcmd.Cmd, error) { return gitcmd.Fetch(req, remote) }, statusAfter)
}

// GitPull runs sandbox::git::pull.
func (s *Service) GitPull(ctx context.Context, req api.GitPullRequest) (api.GitStatus, error) {
	return gitRemote(ctx, s, "pull", req.GitTarget, req.GitRemoteCall, false,
		func(remote string) (gitcmd.Cmd, error) { return gitcmd.Pull(req, remote) }, statusAfter)
}

// GitPush runs sandbox::git::push.
func (s *Service) GitPush(ctx context.Context, req api.GitPushRequest) (api.GitPushResponse, error) {
	var remote string
	return gitRemote(ctx, s, "push", req.GitTarget, req.GitRemoteCall, true,
		func(r string) (gitcmd.Cmd, error) { remote = r; return gitcmd.Push(req, r) },
		func(_ *gitCall, r gitcmd.Result) (api.GitPushResponse, error) {
			return api.GitPushResponse{Remote: remote, Refs: gitcmd.ParsePush(r.Stdout)}, nil
		})
}

// clip shortens s for quoting in an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
