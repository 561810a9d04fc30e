package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
)

// The git tools: the common ones of sandbox::git::*, with structured
// results. Credentials are for the one call, never stored.

type gitIn struct {
	sandboxArg
	Path string `json:"path,omitempty" jsonschema:"the repository's directory, absolute (the image's working directory by default)"`
}

func (in gitIn) target(id string) api.GitTarget { return api.GitTarget{SandboxID: id, Path: in.Path} }

type gitAuthIn struct {
	Username string `json:"username,omitempty" jsonschema:"for an http(s) remote: the user name"`
	Password string `json:"password,omitempty" jsonschema:"the password, for this call only (never stored)"`
	Token    string `json:"token,omitempty" jsonschema:"an access token instead of a password, for this call only"`
	// CredentialsFor scopes them: the sandbox may name any URL as origin.
	CredentialsFor string `json:"credentials_for,omitempty" jsonschema:"where the credentials may go: a host (https) or an http(s) URL prefix such as https://github.com/acme/; by default the host of url or of a remote given as a URL; needed for a remote given by name"`
}

func (in gitAuthIn) auth() api.GitAuth {
	return api.GitAuth{Username: in.Username, Password: api.Secret(in.Password), Token: api.Secret(in.Token), CredentialsFor: in.CredentialsFor}
}

type gitCloneIn struct {
	gitIn
	URL    string `json:"url" jsonschema:"the repository to clone (http, https, ssh, git)"`
	Branch string `json:"branch,omitempty"`
	gitAuthIn
}

type gitCommitIn struct {
	gitIn
	Message string `json:"message"`
	All     bool   `json:"all,omitempty" jsonschema:"stage every change of tracked files first (new files need git_add)"`
}

type gitAddIn struct {
	gitIn
	Paths []string `json:"paths,omitempty" jsonschema:"paths to stage, taken literally; none stages every change"`
}

type gitDiffIn struct {
	gitIn
	Staged bool   `json:"staged,omitempty"`
	Ref    string `json:"ref,omitempty" jsonschema:"a commit to compare with, or a range A..B"`
}

type gitLogIn struct {
	gitIn
	MaxCount int `json:"max_count,omitempty" jsonschema:"how many commits (50 by default)"`
}

type gitRemoteIn struct {
	gitIn
	Remote string `json:"remote,omitempty" jsonschema:"origin by default"`
	Branch string `json:"branch,omitempty"`
	gitAuthIn
}

// gitTool adds a tool that runs function fn on the request req makes.
func gitTool[In, Out any](s *session, a adder, tool *mcp.Tool, fn string, sandboxID func(In) string, req func(In, string) any) {
	addTool(a, api.ToolAreaGit, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var out Out
		id, err := s.sandbox(ctx, sandboxID(in))
		if err != nil {
			return nil, out, toolError(err)
		}
		return nil, out, toolError(s.b.Call(ctx, fn, req(in, id), &out))
	})
}

// registerGit adds the git tools.
func (s *session) registerGit(a adder) {
	readOnly, _, changes := annotations()
	stages := hints(false, false, true, false)
	remote := hints(false, false, false, true)
	gitTool[gitCloneIn, api.GitCloneResponse](s, a, &mcp.Tool{Name: "git_clone", Description: "Clone a git repository into the sandbox (path: where; the image's working directory by default). Credentials are used for this call only.", Annotations: remote},
		api.FnGitClone, func(in gitCloneIn) string { return in.SandboxID }, func(in gitCloneIn, id string) any {
			return api.GitCloneRequest{GitTarget: in.target(id), URL: in.URL, Branch: in.Branch, GitAuth: in.auth()}
		})
	gitTool[gitIn, api.GitStatus](s, a, &mcp.Tool{Name: "git_status", Description: "A repository's status: branch, ahead/behind its upstream, each file's staged and unstaged state, untracked and conflicted files.", Annotations: readOnly},
		api.FnGitStatus, func(in gitIn) string { return in.SandboxID }, func(in gitIn, id string) any {
			return api.GitStatusRequest{GitTarget: in.target(id)}
		})
	gitTool[gitAddIn, api.GitStatus](s, a, &mcp.Tool{Name: "git_add", Description: "Stage paths (or every change); answers the status.", Annotations: stages},
		api.FnGitAdd, func(in gitAddIn) string { return in.SandboxID }, func(in gitAddIn, id string) any {
			return api.GitAddRequest{GitTarget: in.target(id), Paths: in.Paths}
		})
	gitTool[gitCommitIn, api.GitCommitResponse](s, a, &mcp.Tool{Name: "git_commit", Description: "Commit the staged changes with a message; answers the commit. S274 when there is nothing to commit.", Annotations: changes},
		api.FnGitCommit, func(in gitCommitIn) string { return in.SandboxID }, func(in gitCommitIn, id string) any {
			return api.GitCommitRequest{GitTarget: in.target(id), Message: in.Message, All: in.All}
		})
	gitTool[gitDiffIn, api.GitDiffResponse](s, a, &mcp.Tool{Name: "git_diff", Description: "The diff of the unstaged changes (staged: of the staged ones; ref: against a commit or a range), with the changed files.", Annotations: readOnly},
		api.FnGitDiff, func(in gitDiffIn) string { return in.SandboxID }, func(in gitDiffIn, id string) any {
			return api.GitDiffRequest{GitTarget: in.target(id), Staged: in.Staged, Ref: in.Ref, NameStatus: true}
		})
	gitTool[gitLogIn, api.GitLogResponse](s, a, &mcp.Tool{Name: "git_log", Description: "Recent commits, newest first: hash, author, date, subject.", Annotations: readOnly},
		api.FnGitLog, func(in gitLogIn) string { return in.SandboxID }, func(in gitLogIn, id string) any {
			return api.GitLogRequest{GitTarget: in.target(id), MaxCount: in.MaxCount}
		})
	gitTool[gitRemoteIn, api.GitPushResponse](s, a, &mcp.Tool{Name: "git_push", Description: "Push the current branch (or branch) to the remote; credentials for this call only.", Annotations: remote},
		api.FnGitPush, func(in gitRemoteIn) string { return in.SandboxID }, func(in gitRemoteIn, id string) any {
			return api.GitPushRequest{GitTarget: in.target(id), GitRemoteCall: in.remoteCall()}
		})
	gitTool[gitRemoteIn, api.GitStatus](s, a, &mcp.Tool{Name: "git_pull", Description: "Pull the upstream (or branch) from the remote and merge it; credentials for this call only. S273 names conflicting files.", Annotations: remote},
		api.FnGitPull, func(in gitRemoteIn) string { return in.SandboxID }, func(in gitRemoteIn, id string) any {
			return api.GitPullRequest{GitTarget: in.target(id), GitRemoteCall: in.remoteCall()}
		})
}

func (in gitRemoteIn) remoteCall() api.GitRemoteCall {
	return api.GitRemoteCall{Remote: in.Remote, Branch: in.Branch, GitAuth: in.auth()}
}
