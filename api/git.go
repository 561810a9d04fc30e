package api

// Git (hutch extensions): git run inside a sandbox as argument vectors
// (never through a shell), with structured results. Every operation takes
// the fields of GitTarget; those that reach a remote take GitAuth, which
// is handed to git for that one call and stored nowhere.

// Function ids of the git operations.
const (
	FnGitInit     = "sandbox::git::init"
	FnGitClone    = "sandbox::git::clone"
	FnGitStatus   = "sandbox::git::status"
	FnGitAdd      = "sandbox::git::add"
	FnGitCommit   = "sandbox::git::commit"
	FnGitDiff     = "sandbox::git::diff"
	FnGitLog      = "sandbox::git::log"
	FnGitBranch   = "sandbox::git::branch"
	FnGitCheckout = "sandbox::git::checkout"
	FnGitReset    = "sandbox::git::reset"
	FnGitRestore  = "sandbox::git::restore"
	FnGitRemote   = "sandbox::git::remote"
	FnGitConfig   = "sandbox::git::config"
	FnGitFetch    = "sandbox::git::fetch"
	FnGitPush     = "sandbox::git::push"
	FnGitPull     = "sandbox::git::pull"
)

// GitOps are the operations, in the order of their function ids above:
// the last part of each id, and of its REST route.
var GitOps = []string{"init", "clone", "status", "add", "commit", "diff", "log", "branch", "checkout", "reset", "restore", "remote", "config", "fetch", "push", "pull"}

// GitTarget is what every git operation takes: the sandbox, the
// repository and how git runs there.
type GitTarget struct {
	SandboxID string `json:"sandbox_id"`
	// Path is the repository's directory, absolute (for init and clone,
	// where it goes): the image's working directory by default, or its
	// user's home when that is /.
	Path string `json:"path,omitempty"`
	// User runs git as this user (a name or uid[:gid]) instead of the
	// image's.
	User string `json:"user,omitempty"`
	// Env is added to the sandbox's environment for git.
	Env Env `json:"env,omitempty"`
	// TimeoutMs bounds the whole operation (the daemon's exec default and
	// maximum apply).
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
}

func (r *GitTarget) SandboxIDField() *string { return &r.SandboxID }

// Secret is a string that fmt never prints (a password or token in a
// request); JSON carries it as it is.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return `"[redacted]"` }

// GitAuth are credentials for an http(s) remote, for one call: git gets
// them in the environment of that call only, never in its arguments, the
// repository's config or the sandbox's disk. A token is sent as the
// password of username (x-access-token when none is given).
type GitAuth struct {
	Username string `json:"username,omitempty"`
	Password Secret `json:"password,omitempty"`
	Token    Secret `json:"token,omitempty"`
	// CredentialsFor is where the credentials may go: a host (meaning
	// https://HOST/) or an http(s) URL prefix. git sends them only to
	// URLs under it, and a remote whose URL is not is refused (S271). By
	// default the scheme, host and port of a clone's URL or of a remote
	// given as a URL; a remote given by name (whose URL is the sandbox's
	// to change) needs it.
	CredentialsFor string `json:"credentials_for,omitempty"`
}

// GitIdentity names the author (and committer) of the commits a call
// makes; git's configured user.name and user.email otherwise.
type GitIdentity struct {
	AuthorName  string `json:"author_name,omitempty"`
	AuthorEmail string `json:"author_email,omitempty"`
}

// GitInitRequest is the payload of sandbox::git::init.
type GitInitRequest struct {
	GitTarget
	Bare bool `json:"bare,omitempty"`
	// InitialBranch names the first branch (git's default otherwise).
	InitialBranch string `json:"initial_branch,omitempty"`
}

// GitInitResponse is the result of sandbox::git::init.
type GitInitResponse struct {
	Path string `json:"path"`
	Bare bool   `json:"bare"`
}

// GitCloneRequest is the payload of sandbox::git::clone: url into path
// (by default a directory named after the repository in the image's
// working directory). The URL is http, https, ssh, git or an existing
// absolute path in the sandbox; credentials in an http(s) URL are taken
// out of it and used as username and password.
type GitCloneRequest struct {
	GitTarget
	URL string `json:"url"`
	// Branch checks out this branch instead of the remote's HEAD.
	Branch string `json:"branch,omitempty"`
	// Depth makes a shallow clone of that many commits.
	Depth int `json:"depth,omitempty"`
	GitAuth
}

// GitCloneResponse is the result of sandbox::git::clone.
type GitCloneResponse struct {
	Path string `json:"path"`
	// URL is the remote as stored for origin: without credentials.
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// GitStatusRequest is the payload of sandbox::git::status.
type GitStatusRequest struct {
	GitTarget
}

// GitStatus is a repository's state (git status --porcelain=v2): the
// result of sandbox::git::status and of the operations that change it.
type GitStatus struct {
	// Branch is the current branch; empty when HEAD is detached.
	Branch   string `json:"branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	// Commit is HEAD's hash; empty before the first commit.
	Commit   string `json:"commit,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	// Ahead and Behind count commits against the upstream.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Clean says no file is staged, changed, untracked or conflicted.
	Clean bool            `json:"clean"`
	Files []GitFileStatus `json:"files"`
	// Truncated says git listed more files than the output cap holds.
	Truncated bool `json:"truncated,omitempty"`
}

// File states of GitFileStatus's Index and Worktree.
const (
	GitUnmodified  = "unmodified"
	GitModified    = "modified"
	GitTypeChanged = "type_changed"
	GitAdded       = "added"
	GitDeleted     = "deleted"
	GitRenamed     = "renamed"
	GitCopied      = "copied"
	GitUnmerged    = "unmerged"
	GitUntracked   = "untracked"
	GitIgnored     = "ignored"
	GitConflicted  = "conflicted"
)

// GitFileStatus is one file of a status.
type GitFileStatus struct {
	Path string `json:"path"`
	// RenamedFrom is the path a renamed or copied file had.
	RenamedFrom string `json:"renamed_from,omitempty"`
	// Index is the staged change (against HEAD), Worktree the unstaged
	// one (against the index): unmodified, modified, type_changed, added,
	// deleted, renamed, copied, unmerged or untracked.
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
	// Status sums them up: conflicted, untracked, or the staged change,
	// else the unstaged one.
	Status     string `json:"status"`
	Staged     bool   `json:"staged"`
	Conflicted bool   `json:"conflicted,omitempty"`
	Untracked  bool   `json:"untracked,omitempty"`
}

// GitAddRequest is the payload of sandbox::git::add: stages paths
// (relative to the repository, or absolute), or every change when none
// are given. Paths are literal: no globs or pathspec magic.
type GitAddRequest struct {
	GitTarget
	Paths []string `json:"paths,omitempty"`
}

// GitCommitRequest is the payload of sandbox::git::commit.
type GitCommitRequest struct {
	GitTarget
	Message string `json:"message"`
	// All stages every change of tracked files first (git commit -a).
	All        bool `json:"all,omitempty"`
	AllowEmpty bool `json:"allow_empty,omitempty"`
	Amend      bool `json:"amend,omitempty"`
	GitIdentity
}

// GitCommit is one commit.
type GitCommit struct {
	Hash    string   `json:"hash"`
	Parents []string `json:"parents"`
	Author  string   `json:"author"`
	Email   string   `json:"email"`
	// Date is the author date, RFC 3339.
	Date    string `json:"date"`
	Subject string `json:"subject"`
}

// GitCommitResponse is the result of sandbox::git::commit.
type GitCommitResponse struct {
	Commit GitCommit `json:"commit"`
}

// GitDiffRequest is the payload of sandbox::git::diff: the unstaged
// changes, the staged ones (staged), or the work tree (the index with
// staged) against ref, or between two commits (ref "A..B").
type GitDiffRequest struct {
	GitTarget
	Staged bool     `json:"staged,omitempty"`
	Ref    string   `json:"ref,omitempty"`
	Paths  []string `json:"paths,omitempty"`
	// NameStatus adds the changed files with their status letters.
	NameStatus bool `json:"name_status,omitempty"`
	// MaxBytes cuts the diff's text (1 MiB by default; the daemon's
	// output cap at most).
	MaxBytes int `json:"max_bytes,omitempty"`
}

// GitDiffFile is a changed file of a diff (git diff --name-status).
type GitDiffFile struct {
	// Status is git's letter: A, C, D, M, R, T, U or X.
	Status string `json:"status"`
	Path   string `json:"path"`
	// RenamedFrom is the old path of a rename or copy.
	RenamedFrom string `json:"renamed_from,omitempty"`
}

// GitDiffResponse is the result of sandbox::git::diff.
type GitDiffResponse struct {
	Diff string `json:"diff"`
	// Truncated says the diff was longer than max_bytes and is cut.
	Truncated bool          `json:"truncated"`
	Files     []GitDiffFile `json:"files,omitempty"`
}

// GitLogRequest is the payload of sandbox::git::log.
type GitLogRequest struct {
	GitTarget
	// Ref is where the history starts (HEAD by default), or a range A..B.
	Ref string `json:"ref,omitempty"`
	// MaxCount is how many commits (50 by default, 1000 at most).
	MaxCount int      `json:"max_count,omitempty"`
	Skip     int      `json:"skip,omitempty"`
	Paths    []string `json:"paths,omitempty"`
}

// GitLogResponse is the result of sandbox::git::log, newest first.
type GitLogResponse struct {
	Commits []GitCommit `json:"commits"`
	// Truncated says more commits were asked for than the output cap
	// holds: the list ends early.
	Truncated bool `json:"truncated,omitempty"`
}

// GitBranchRequest is the payload of sandbox::git::branch: lists the
// branches; with name, first creates that branch (at start_point, HEAD by
// default), or deletes it (delete; force deletes an unmerged one, or
// moves an existing one on create).
type GitBranchRequest struct {
	GitTarget
	Name       string `json:"name,omitempty"`
	StartPoint string `json:"start_point,omitempty"`
	Delete     bool   `json:"delete,omitempty"`
	Force      bool   `json:"force,omitempty"`
	// Remotes lists remote-tracking branches too.
	Remotes bool `json:"remotes,omitempty"`
}

// GitBranch is one branch.
type GitBranch struct {
	// Name is short: main, or origin/main for a remote-tracking branch.
	Name     string `json:"name"`
	Current  bool   `json:"current"`
	Remote   bool   `json:"remote,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Commit   string `json:"commit"`
	Ahead    int    `json:"ahead,omitempty"`
	Behind   int    `json:"behind,omitempty"`
	// Gone says its upstream no longer exists.
	Gone bool `json:"gone,omitempty"`
}

// GitBranchResponse is the result of sandbox::git::branch.
type GitBranchResponse struct {
	// Current is the checked-out branch; empty when HEAD is detached.
	Current  string      `json:"current,omitempty"`
	Branches []GitBranch `json:"branches"`
}

// GitCheckoutRequest is the payload of sandbox::git::checkout: switches
// to a branch, tag or commit (ref), or creates branch ref (create) at
// start_point and switches to it.
type GitCheckoutRequest struct {
	GitTarget
	Ref        string `json:"ref"`
	Create     bool   `json:"create,omitempty"`
	StartPoint string `json:"start_point,omitempty"`
	// Force throws away local changes that are in the way.
	Force bool `json:"force,omitempty"`
}

// GitResetRequest is the payload of sandbox::git::reset: moves the
// current branch to ref (HEAD by default) with mode soft, mixed (the
// default) or hard; with paths, unstages those paths only.
type GitResetRequest struct {
	GitTarget
	Mode  string   `json:"mode,omitempty"`
	Ref   string   `json:"ref,omitempty"`
	Paths []string `json:"paths,omitempty"`
}

// GitRestoreRequest is the payload of sandbox::git::restore: restores
// paths in the work tree (by default) and/or the index (staged) from
// source (the index, or HEAD for staged, by default).
type GitRestoreRequest struct {
	GitTarget
	Paths    []string `json:"paths"`
	Staged   bool     `json:"staged,omitempty"`
	Worktree bool     `json:"worktree,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// GitRemoteRequest is the payload of sandbox::git::remote: lists the
// remotes; with name and url, first adds that remote (overwrite replaces
// the URL of an existing one); with name and remove, removes it.
type GitRemoteRequest struct {
	GitTarget
	Name      string `json:"name,omitempty"`
	URL       string `json:"url,omitempty"`
	Remove    bool   `json:"remove,omitempty"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// GitRemote is one remote; a password in a URL (written by something
// else than hutch) is shown as ***.
type GitRemote struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	PushURL string `json:"push_url,omitempty"`
}

// GitRemoteResponse is the result of sandbox::git::remote.
type GitRemoteResponse struct {
	Remotes []GitRemote `json:"remotes"`
}

// GitConfigRequest is the payload of sandbox::git::config: with key and
// value, sets key; with key alone, gets its values; with unset, removes
// it; with neither, lists every entry of the scope (local, the
// repository's, by default; or global, the user's).
type GitConfigRequest struct {
	GitTarget
	Key   string  `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
	Unset bool    `json:"unset,omitempty"`
	Scope string  `json:"scope,omitempty"`
}

// GitConfigEntry is one value of a key.
type GitConfigEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// GitConfigResponse is the result of sandbox::git::config.
type GitConfigResponse struct {
	Entries []GitConfigEntry `json:"entries"`
}

// GitRemoteCall is what fetch, pull and push take: the remote (a name,
// origin by default, or a URL) and a branch.
type GitRemoteCall struct {
	Remote string `json:"remote,omitempty"`
	Branch string `json:"branch,omitempty"`
	GitAuth
}

// GitFetchRequest is the payload of sandbox::git::fetch; its result is
// the status after it (ahead and behind its upstream).
type GitFetchRequest struct {
	GitTarget
	GitRemoteCall
	// Prune removes remote-tracking branches that are gone.
	Prune bool `json:"prune,omitempty"`
}

// GitPullRequest is the payload of sandbox::git::pull: fetches branch
// (the upstream by default) and merges it (rebase: rebases onto it;
// ff_only: refuses anything but a fast-forward). Its result is the status
// after it.
type GitPullRequest struct {
	GitTarget
	GitRemoteCall
	Rebase bool `json:"rebase,omitempty"`
	FFOnly bool `json:"ff_only,omitempty"`
	GitIdentity
}

// GitPushRequest is the payload of sandbox::git::push: pushes branch (the
// current branch by default) to the same name on the remote.
type GitPushRequest struct {
	GitTarget
	GitRemoteCall
	// SetUpstream makes the pushed branch the local branch's upstream.
	SetUpstream bool `json:"set_upstream,omitempty"`
	// Force overwrites the remote branch if it is still where this
	// repository last saw it (--force-with-lease).
	Force bool `json:"force,omitempty"`
}

// GitPushRef is one ref a push updated or tried to.
type GitPushRef struct {
	Local  string `json:"local"`
	Remote string `json:"remote"`
	// Status is new, updated, forced, deleted, up_to_date or rejected.
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// GitPushResponse is the result of sandbox::git::push.
type GitPushResponse struct {
	Remote string       `json:"remote"`
	Refs   []GitPushRef `json:"refs"`
}
