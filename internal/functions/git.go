package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Git runs git inside sandboxes.
type Git interface {
	GitInit(ctx context.Context, req api.GitInitRequest) (api.GitInitResponse, error)
	GitClone(ctx context.Context, req api.GitCloneRequest) (api.GitCloneResponse, error)
	GitStatus(ctx context.Context, req api.GitStatusRequest) (api.GitStatus, error)
	GitAdd(ctx context.Context, req api.GitAddRequest) (api.GitStatus, error)
	GitCommit(ctx context.Context, req api.GitCommitRequest) (api.GitCommitResponse, error)
	GitDiff(ctx context.Context, req api.GitDiffRequest) (api.GitDiffResponse, error)
	GitLog(ctx context.Context, req api.GitLogRequest) (api.GitLogResponse, error)
	GitBranch(ctx context.Context, req api.GitBranchRequest) (api.GitBranchResponse, error)
	GitCheckout(ctx context.Context, req api.GitCheckoutRequest) (api.GitStatus, error)
	GitReset(ctx context.Context, req api.GitResetRequest) (api.GitStatus, error)
	GitRestore(ctx context.Context, req api.GitRestoreRequest) (api.GitStatus, error)
	GitRemote(ctx context.Context, req api.GitRemoteRequest) (api.GitRemoteResponse, error)
	GitConfig(ctx context.Context, req api.GitConfigRequest) (api.GitConfigResponse, error)
	GitFetch(ctx context.Context, req api.GitFetchRequest) (api.GitStatus, error)
	GitPush(ctx context.Context, req api.GitPushRequest) (api.GitPushResponse, error)
	GitPull(ctx context.Context, req api.GitPullRequest) (api.GitStatus, error)
}

// registerGit adds sandbox::git::*, when the table has Git.
func registerGit(t *Table) {
	g := t.deps.Git
	if g == nil {
		return
	}
	const each = " (git runs in the sandbox as the image's user or user, in path: the working directory by default)"
	add(t, api.FnGitInit, "Create a git repository at path (bare, initial_branch)"+each, g.GitInit)
	add(t, api.FnGitClone, "Clone url (http, https, ssh, git, or a path in the sandbox) into path; username/password or token are used for this call only, never stored"+each, g.GitClone)
	add(t, api.FnGitStatus, "A repository's status: branch, upstream, ahead/behind, and each file's staged and unstaged state, renames, untracked and conflicted files"+each, g.GitStatus)
	add(t, api.FnGitAdd, "Stage paths (taken literally), or every change; answers the status"+each, g.GitAdd)
	add(t, api.FnGitCommit, "Commit the staged changes (all: every change of tracked files) with message, as author_name/author_email or git's configured user; answers the commit"+each, g.GitCommit)
	add(t, api.FnGitDiff, "The diff's text (unstaged, staged, or against ref or a range), cut at max_bytes and saying so; name_status adds the changed files"+each, g.GitDiff)
	add(t, api.FnGitLog, "Commits from ref (HEAD by default), newest first: hash, parents, author, email, date, subject"+each, g.GitLog)
	add(t, api.FnGitBranch, "List branches (name, current, upstream, commit, ahead/behind), after creating or deleting name"+each, g.GitBranch)
	add(t, api.FnGitCheckout, "Switch to a branch, tag or commit, or create a branch (create, start_point); answers the status"+each, g.GitCheckout)
	add(t, api.FnGitReset, "Move the current branch to ref (mode soft, mixed or hard), or unstage paths; answers the status"+each, g.GitReset)
	add(t, api.FnGitRestore, "Restore paths in the work tree or the index (staged) from source; answers the status"+each, g.GitRestore)
	add(t, api.FnGitRemote, "List remotes, after adding name with url (overwrite), or removing name; a URL with a password is refused"+each, g.GitRemote)
	add(t, api.FnGitConfig, "Set, get, unset or list git config (scope local or global)"+each, g.GitConfig)
	add(t, api.FnGitFetch, "Fetch from remote (origin by default) with this call's credentials; answers the status"+each, g.GitFetch)
	add(t, api.FnGitPush, "Push branch (the current one by default) to remote with this call's credentials; answers each ref's outcome"+each, g.GitPush)
	add(t, api.FnGitPull, "Pull branch (the upstream by default) from remote with this call's credentials (rebase, ff_only); answers the status"+each, g.GitPull)
}
