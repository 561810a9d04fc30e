package client

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Git operations (sandbox::git::*): each posts its request to
// /v1/sandboxes/{id}/git/{op}. Credentials (GitAuth) go in the request's
// body only, for that one call.

// GitInit runs sandbox::git::init.
func (c *Client) GitInit(ctx context.Context, req api.GitInitRequest) (api.GitInitResponse, error) {
	return gitCall[api.GitInitResponse](ctx, c, req.SandboxID, "init", req)
}

// GitClone runs sandbox::git::clone.
func (c *Client) GitClone(ctx context.Context, req api.GitCloneRequest) (api.GitCloneResponse, error) {
	return gitCall[api.GitCloneResponse](ctx, c, req.SandboxID, "clone", req)
}

// GitStatus runs sandbox::git::status.
func (c *Client) GitStatus(ctx context.Context, req api.GitStatusRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "status", req)
}

// GitAdd runs sandbox::git::add.
func (c *Client) GitAdd(ctx context.Context, req api.GitAddRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "add", req)
}

// GitCommit runs sandbox::git::commit.
func (c *Client) GitCommit(ctx context.Context, req api.GitCommitRequest) (api.GitCommitResponse, error) {
	return gitCall[api.GitCommitResponse](ctx, c, req.SandboxID, "commit", req)
}

// GitDiff runs sandbox::git::diff.
func (c *Client) GitDiff(ctx context.Context, req api.GitDiffRequest) (api.GitDiffResponse, error) {
	return gitCall[api.GitDiffResponse](ctx, c, req.SandboxID, "diff", req)
}

// GitLog runs sandbox::git::log.
func (c *Client) GitLog(ctx context.Context, req api.GitLogRequest) (api.GitLogResponse, error) {
	return gitCall[api.GitLogResponse](ctx, c, req.SandboxID, "log", req)
}

// GitBranch runs sandbox::git::branch.
func (c *Client) GitBranch(ctx context.Context, req api.GitBranchRequest) (api.GitBranchResponse, error) {
	return gitCall[api.GitBranchResponse](ctx, c, req.SandboxID, "branch", req)
}

// GitCheckout runs sandbox::git::checkout.
func (c *Client) GitCheckout(ctx context.Context, req api.GitCheckoutRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "checkout", req)
}

// GitReset runs sandbox::git::reset.
func (c *Client) GitReset(ctx context.Context, req api.GitResetRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "reset", req)
}

// GitRestore runs sandbox::git::restore.
func (c *Client) GitRestore(ctx context.Context, req api.GitRestoreRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "restore", req)
}

// GitRemote runs sandbox::git::remote.
func (c *Client) GitRemote(ctx context.Context, req api.GitRemoteRequest) (api.GitRemoteResponse, error) {
	return gitCall[api.GitRemoteResponse](ctx, c, req.SandboxID, "remote", req)
}

// GitConfig runs sandbox::git::config.
func (c *Client) GitConfig(ctx context.Context, req api.GitConfigRequest) (api.GitConfigResponse, error) {
	return gitCall[api.GitConfigResponse](ctx, c, req.SandboxID, "config", req)
}

// GitFetch runs sandbox::git::fetch.
func (c *Client) GitFetch(ctx context.Context, req api.GitFetchRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "fetch", req)
}

// GitPush runs sandbox::git::push.
func (c *Client) GitPush(ctx context.Context, req api.GitPushRequest) (api.GitPushResponse, error) {
	return gitCall[api.GitPushResponse](ctx, c, req.SandboxID, "push", req)
}

// GitPull runs sandbox::git::pull.
func (c *Client) GitPull(ctx context.Context, req api.GitPullRequest) (api.GitStatus, error) {
	return gitCall[api.GitStatus](ctx, c, req.SandboxID, "pull", req)
}

// gitCall posts req to git operation op of sandbox id.
func gitCall[Resp any](ctx context.Context, c *Client, id, op string, req any) (Resp, error) {
	return sandboxCall[Resp](ctx, c, id, "/git/"+op, req)
}
