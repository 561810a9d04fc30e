package client_test

import (
	"context"
	"errors"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// callGit calls every git method of c on sandbox id (for
// TestClientCoversEveryRoute).
func callGit(ctx context.Context, c *client.Client, id string) error {
	t := api.GitTarget{SandboxID: id}
	var errs []error
	keep := func(_ any, err error) { errs = append(errs, err) }
	keep(c.GitInit(ctx, api.GitInitRequest{GitTarget: t}))
	keep(c.GitClone(ctx, api.GitCloneRequest{GitTarget: t, URL: "https://example.com/r.git"}))
	keep(c.GitStatus(ctx, api.GitStatusRequest{GitTarget: t}))
	keep(c.GitAdd(ctx, api.GitAddRequest{GitTarget: t}))
	keep(c.GitCommit(ctx, api.GitCommitRequest{GitTarget: t, Message: "m"}))
	keep(c.GitDiff(ctx, api.GitDiffRequest{GitTarget: t}))
	keep(c.GitLog(ctx, api.GitLogRequest{GitTarget: t}))
	keep(c.GitBranch(ctx, api.GitBranchRequest{GitTarget: t}))
	keep(c.GitCheckout(ctx, api.GitCheckoutRequest{GitTarget: t, Ref: "main"}))
	keep(c.GitReset(ctx, api.GitResetRequest{GitTarget: t}))
	keep(c.GitRestore(ctx, api.GitRestoreRequest{GitTarget: t, Paths: []string{"f"}}))
	keep(c.GitRemote(ctx, api.GitRemoteRequest{GitTarget: t}))
	keep(c.GitConfig(ctx, api.GitConfigRequest{GitTarget: t}))
	keep(c.GitFetch(ctx, api.GitFetchRequest{GitTarget: t}))
	keep(c.GitPush(ctx, api.GitPushRequest{GitTarget: t}))
	keep(c.GitPull(ctx, api.GitPullRequest{GitTarget: t}))
	return errors.Join(errs...)
}
