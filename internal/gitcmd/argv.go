package gitcmd

// The commands of the operations. Each builder checks the values of its
// request and places them where git cannot read them as options: after
// --end-of-options or --, or glued to their option (--branch=B). git
// 2.39 (Debian 12's) mishandles --end-of-options in checkout and reset;
// there the values' checks (no leading '-') and a trailing -- do it.

import (
	"path"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Defaults and bounds of the operations.
const (
	DefaultLogCount   = 50
	MaxLogCount       = 1000
	DefaultDiffBytes  = 1 << 20
	DefaultRemote     = "origin"
	logFields         = 6
	logFormat         = "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%s"
	branchFormat      = "--format=%(HEAD)%00%(refname)%00%(upstream:short)%00%(objectname)%00%(upstream:track,nobracket)"
	remoteConfigRegex = `^remote\..*\.(url|pushurl)$`
)

// Init is git init of dir.
func Init(req api.GitInitRequest, dir string) (Cmd, error) {
	args := []string{"init", "-q"}
	if req.Bare {
		args = append(args, "--bare")
	}
	if req.InitialBranch != "" {
		if err := CheckRef("initial_branch", req.InitialBranch); err != nil {
			return Cmd{}, err
		}
		args = append(args, "--initial-branch="+req.InitialBranch)
	}
	return Cmd{Args: append(args, "--", dir), Dir: "/"}, nil
}

// CloneDir is where a clone of url goes in parent when no path is given:
// the URL's last part without .git, as git names it.
func CloneDir(parent, rawURL string) string {
	name := strings.TrimRight(rawURL, "/")
	name = strings.TrimSuffix(strings.TrimSuffix(name, "/.git"), ".git")
	if i := strings.LastIndexAny(name, "/:"); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || name == "." || name == ".." {
		name = "repo"
	}
	return path.Join(parent, name)
}

// Clone is git clone of remote r into dir, with creds for this call.
func Clone(req api.GitCloneRequest, r Remote, creds Credentials, dir string) (Cmd, error) {
	args := []string{"clone", "-q"}
	if req.Branch != "" {
		if err := CheckRef("branch", req.Branch); err != nil {
			return Cmd{}, err
		}
		args = append(args, "--branch="+req.Branch)
	}
	if req.Depth < 0 {
		return Cmd{}, errdefs.Malformed("depth must not be negative, got %d", req.Depth)
	}
	if req.Depth > 0 {
		args = append(args, "--depth="+strconv.Itoa(req.Depth))
	}
	env, err := AuthFor(r, creds)
	if err != nil {
		return Cmd{}, err
	}
	return Cmd{Args: append(args, "--end-of-options", r.URL, dir), Dir: "/", Env: env}, nil
}

// Status is git status in porcelain v2 with the branch's headers.
func Status() Cmd {
	return Cmd{Args: []string{"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"}}
}

// Add stages paths, or every change when there are none.
func Add(paths []string) (Cmd, error) {
	if len(paths) == 0 {
		return Cmd{Args: []string{"add", "--all"}}, nil
	}
	if err := CheckPaths(paths); err != nil {
		return Cmd{}, err
	}
	return Cmd{Args: append([]string{"add", "--"}, paths...)}, nil
}

// Commit commits with the message on stdin.
func Commit(req api.GitCommitRequest) (Cmd, error) {
	args := []string{"commit", "-q"}
	if req.All {
		args = append(args, "--all")
	}
	if req.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if req.Amend {
		args = append(args, "--amend")
	}
	env, err := Identity(req.GitIdentity)
	if err != nil {
		return Cmd{}, err
	}
	switch {
	case strings.IndexByte(req.Message, 0) >= 0:
		return Cmd{}, errdefs.Malformed("message holds a NUL")
	case strings.TrimSpace(req.Message) != "":
		args = append(args, "--file=-")
	case req.Amend:
		args = append(args, "--no-edit")
	default:
		return Cmd{}, errdefs.Malformed("message is required")
	}
	return Cmd{Args: args, Env: env, Stdin: []byte(req.Message)}, nil
}

// Identity is the environment of id's author and committer.
func Identity(id api.GitIdentity) ([]string, error) {
	if err := CheckText("author_name", id.AuthorName); err != nil {
		return nil, err
	}
	if err := CheckText("author_email", id.AuthorEmail); err != nil {
		return nil, err
	}
	return identityEnv(id.AuthorName, id.AuthorEmail), nil
}

// Log lists commits from ref (HEAD by default).
func Log(req api.GitLogRequest) (Cmd, error) {
	n := req.MaxCount
	switch {
	case n == 0:
		n = DefaultLogCount
	case n < 0 || n > MaxLogCount:
		return Cmd{}, errdefs.Malformed("max_count must be 1 to %d, got %d", MaxLogCount, n)
	}
	if req.Skip < 0 {
		return Cmd{}, errdefs.Malformed("skip must not be negative, got %d", req.Skip)
	}
	args := []string{"log", "--no-color", "--no-show-signature", "-z", logFormat, "--max-count=" + strconv.Itoa(n)}
	if req.Skip > 0 {
		args = append(args, "--skip="+strconv.Itoa(req.Skip))
	}
	return revsAndPaths(args, req.Ref, req.Paths)
}

// LastCommit is the log entry of HEAD.
func LastCommit() Cmd {
	return Cmd{Args: []string{"log", "--no-color", "--no-show-signature", "-z", logFormat, "--max-count=1"}}
}

// revsAndPaths ends args with ref (a revision or range) after
// --end-of-options, then -- and paths.
func revsAndPaths(args []string, ref string, paths []string) (Cmd, error) {
	if ref != "" {
		if err := CheckRev("ref", ref, true); err != nil {
			return Cmd{}, err
		}
		args = append(args, "--end-of-options", ref)
	}
	if err := CheckPaths(paths); err != nil {
		return Cmd{}, err
	}
	return Cmd{Args: append(append(args, "--"), paths...)}, nil
}

// Diff is the diff's text, cut at its max_bytes; NameStatus the same
// diff's files.
func Diff(req api.GitDiffRequest, maxBytes int) (Cmd, error) {
	c, err := revsAndPaths(diffArgs(req, "--no-color", "--no-ext-diff"), req.Ref, req.Paths)
	c.MaxOutput = maxBytes
	return c, err
}

// DiffNameStatus lists the files of the diff of req.
func DiffNameStatus(req api.GitDiffRequest) (Cmd, error) {
	return revsAndPaths(diffArgs(req, "--name-status", "-z"), req.Ref, req.Paths)
}

func diffArgs(req api.GitDiffRequest, opts ...string) []string {
	args := append([]string{"diff"}, opts...)
	if req.Staged {
		args = append(args, "--cached")
	}
	return args
}

// Branches lists the branches (and remote-tracking ones with remotes).
func Branches(remotes bool) Cmd {
	args := []string{"for-each-ref", branchFormat, "refs/heads"}
	if remotes {
		args = append(args, "refs/remotes")
	}
	return Cmd{Args: args}
}

// BranchChange creates or deletes the branch of req.
func BranchChange(req api.GitBranchRequest) (Cmd, error) {
	if err := CheckRef("name", req.Name); err != nil {
		return Cmd{}, err
	}
	if req.Delete {
		if req.StartPoint != "" {
			return Cmd{}, errdefs.Malformed("start_point goes with creating a branch, not with delete")
		}
		flag := "-d"
		if req.Force {
			flag = "-D"
		}
		return Cmd{Args: []string{"branch", flag, "--end-of-options", req.Name}}, nil
	}
	args := []string{"branch"}
	if req.Force {
		args = append(args, "--force")
	}
	args = append(args, "--end-of-options", req.Name)
	if req.StartPoint != "" {
		if err := CheckRev("start_point", req.StartPoint, false); err != nil {
			return Cmd{}, err
		}
		args = append(args, req.StartPoint)
	}
	return Cmd{Args: args}, nil
}

// Checkout switches to ref, or creates it first.
func Checkout(req api.GitCheckoutRequest) (Cmd, error) {
	args := []string{"checkout", "-q"}
	if req.Force {
		args = append(args, "--force")
	}
	if req.Create {
		if err := CheckRef("ref", req.Ref); err != nil {
			return Cmd{}, err
		}
		args = append(args, "-b", req.Ref)
		if req.StartPoint != "" {
			if err := CheckRev("start_point", req.StartPoint, false); err != nil {
				return Cmd{}, err
			}
			args = append(args, req.StartPoint)
		}
		return Cmd{Args: append(args, "--")}, nil
	}
	if req.StartPoint != "" {
		return Cmd{}, errdefs.Malformed("start_point goes with create")
	}
	if err := CheckRev("ref", req.Ref, false); err != nil {
		return Cmd{}, err
	}
	return Cmd{Args: append(args, req.Ref, "--")}, nil
}

// Reset modes.
var resetModes = map[string]bool{"soft": true, "mixed": true, "hard": true}

// Reset moves the branch (mode) or unstages paths.
func Reset(req api.GitResetRequest) (Cmd, error) {
	ref := req.Ref
	if ref == "" {
		ref = "HEAD"
	}
	if err := CheckRev("ref", ref, false); err != nil {
		return Cmd{}, err
	}
	if len(req.Paths) > 0 {
		if req.Mode != "" && req.Mode != "mixed" {
			return Cmd{}, errdefs.Malformed("mode %s cannot go with paths: paths are only unstaged", quote(req.Mode))
		}
		if err := CheckPaths(req.Paths); err != nil {
			return Cmd{}, err
		}
		return Cmd{Args: append([]string{"reset", "-q", ref, "--"}, req.Paths...)}, nil
	}
	mode := req.Mode
	if mode == "" {
		mode = "mixed"
	}
	if !resetModes[mode] {
		return Cmd{}, errdefs.Malformed("mode must be soft, mixed or hard, got %s", quote(mode))
	}
	return Cmd{Args: []string{"reset", "-q", "--" + mode, ref, "--"}}, nil
}

// Restore restores paths from the index or a source.
func Restore(req api.GitRestoreRequest) (Cmd, error) {
	if len(req.Paths) == 0 {
		return Cmd{}, errdefs.Malformed("paths is required (the files to restore)")
	}
	if err := CheckPaths(req.Paths); err != nil {
		return Cmd{}, err
	}
	args := []string{"restore"}
	if req.Staged {
		args = append(args, "--staged")
	}
	if req.Worktree {
		args = append(args, "--worktree")
	}
	if req.Source != "" {
		if err := CheckRev("source", req.Source, false); err != nil {
			return Cmd{}, err
		}
		args = append(args, "--source="+req.Source)
	}
	return Cmd{Args: append(append(args, "--"), req.Paths...)}, nil
}

// Remotes lists the remotes' URLs from the config.
func Remotes() Cmd {
	return Cmd{Args: []string{"config", "-z", "--get-regexp", remoteConfigRegex}}
}

// RemoteAdd adds remote name (or sets its URL, replace).
func RemoteAdd(name, url string, replace bool) Cmd {
	verb := "add"
	if replace {
		verb = "set-url"
	}
	return Cmd{Args: []string{"remote", verb, "--end-of-options", name, url}}
}

// RemoteRemove removes remote name.
func RemoteRemove(name string) Cmd {
	return Cmd{Args: []string{"remote", "remove", "--end-of-options", name}}
}

// RemoteURL is every (push) URL of remote name, one a line.
func RemoteURL(name string, push bool) Cmd {
	args := []string{"remote", "get-url", "--all"}
	if push {
		args = append(args, "--push")
	}
	return Cmd{Args: append(args, "--end-of-options", name)}
}

// Config scopes.
var configScopes = map[string]string{"": "--local", "local": "--local", "global": "--global"}

// Config sets, gets, unsets or lists config keys.
func Config(req api.GitConfigRequest) (Cmd, error) {
	scope, ok := configScopes[req.Scope]
	if !ok {
		return Cmd{}, errdefs.Malformed("scope must be local or global, got %s", quote(req.Scope))
	}
	if req.Key == "" {
		if req.Value != nil || req.Unset {
			return Cmd{}, errdefs.Malformed("key is required with value or unset")
		}
		return Cmd{Args: []string{"config", scope, "-z", "--list"}}, nil
	}
	if err := CheckConfigKey(req.Key); err != nil {
		return Cmd{}, err
	}
	switch {
	case req.Unset && req.Value != nil:
		return Cmd{}, errdefs.Malformed("give value or unset, not both")
	case req.Unset:
		return Cmd{Args: []string{"config", scope, "--unset-all", "--end-of-options", req.Key}}, nil
	case req.Value == nil:
		return Cmd{Args: []string{"config", scope, "-z", "--get-all", "--end-of-options", req.Key}}, nil
	}
	if err := CheckConfigValue(*req.Value); err != nil {
		return Cmd{}, err
	}
	if k := strings.ToLower(req.Key); strings.HasPrefix(k, "remote.") && (strings.HasSuffix(k, ".url") || strings.HasSuffix(k, ".pushurl")) {
		if r, err := ParseRemoteURL("value", *req.Value); err != nil {
			return Cmd{}, err
		} else if r.Password != "" {
			return Cmd{}, PasswordInURL()
		}
	}
	return Cmd{Args: []string{"config", scope, "--replace-all", "--end-of-options", req.Key, *req.Value}}, nil
}

// PasswordInURL refuses a URL with a password where it would be stored.
func PasswordInURL() error {
	return errdefs.Malformed("the URL holds a password, which would be stored in the repository's config").
		WithFix(nil, "give the URL without credentials, and username/password or token to fetch, pull and push")
}

// RemoteArg is the remote of a fetch, pull or push: a remote's name or a
// URL.
type RemoteArg struct {
	// Arg is what git is given.
	Arg string
	// Name is set for a remote's name, URL for a URL.
	Name string
	URL  *Remote
}

// ParseRemoteArg takes a remote's name (origin when empty) or URL apart.
func ParseRemoteArg(remote string) (RemoteArg, error) {
	if remote == "" {
		remote = DefaultRemote
	}
	if strings.ContainsAny(remote, ":/") {
		r, err := ParseRemoteURL("remote", remote)
		if err != nil {
			return RemoteArg{}, err
		}
		return RemoteArg{Arg: r.URL, URL: &r}, nil
	}
	if err := CheckRef("remote", remote); err != nil {
		return RemoteArg{}, err
	}
	return RemoteArg{Arg: remote, Name: remote}, nil
}

// Creds are the credentials of a call: its auth fields, or those taken
// out of its URL (r may be nil), not both.
func Creds(auth api.GitAuth, r *Remote) (Credentials, error) {
	if auth.Password != "" && auth.Token != "" {
		return Credentials{}, errdefs.Malformed("give password or token, not both")
	}
	c := Credentials{Username: auth.Username, Password: string(auth.Password)}
	if auth.Token != "" {
		c.Password = string(auth.Token)
	}
	if err := CheckText("username", c.Username); err != nil || strings.Contains(c.Username, ":") {
		return Credentials{}, errdefs.Malformed("username holds a control character, ':', '<' or '>', or is longer than 256 bytes")
	}
	if strings.ContainsAny(c.Password, "\x00\r\n") {
		return Credentials{}, errdefs.Malformed("the password or token holds a NUL or a line break")
	}
	var err error
	if c.For, err = ParseScope(auth.CredentialsFor); err != nil {
		return Credentials{}, err
	}
	if r != nil && (r.Username != "" || r.Password != "") {
		if !c.Empty() || (c.Username != "" && r.Username != "" && c.Username != r.Username) {
			return Credentials{}, errdefs.Malformed("the URL holds credentials and the request does too: give them once")
		}
		if c.Username == "" {
			c.Username = r.Username
		}
		c.Password = r.Password
	}
	if c.Empty() && !c.For.IsZero() {
		return Credentials{}, errdefs.Malformed("credentials_for goes with a password or token")
	}
	return c, nil
}

// RemoteCall is the remote and credentials of a fetch, pull or push.
type RemoteCall struct {
	RemoteArg
	Creds Credentials
}

// ParseRemoteCall checks the remote and credentials of rc.
func ParseRemoteCall(rc api.GitRemoteCall) (RemoteCall, error) {
	ra, err := ParseRemoteArg(rc.Remote)
	if err != nil {
		return RemoteCall{}, err
	}
	creds, err := Creds(rc.GitAuth, ra.URL)
	if err != nil {
		return RemoteCall{}, err
	}
	if ra.URL == nil && !creds.Empty() && creds.For.IsZero() {
		return RemoteCall{}, errdefs.Malformed("credentials for remote %s, given by name, need credentials_for: the host or URL prefix they may go to (the remote's URL is the sandbox's to change)", ra.Name).
			WithFix(nil, "give credentials_for (https://github.com/acme/, or a host for https), or the remote's URL as remote")
	}
	return RemoteCall{RemoteArg: ra, Creds: creds}, nil
}

// NeedsURL says the call's credentials go to a remote given by name:
// its URLs (RemoteURL) must be under credentials_for.
func (c RemoteCall) NeedsURL() bool { return c.URL == nil && !c.Creds.Empty() }

// Auth is the environment that hands git the call's credentials (AuthFor);
// urls is what RemoteURL answered (one a line) when NeedsURL. Each of them
// must be under credentials_for; git itself sends the credentials only
// there, whatever the repository's config says by the time it runs.
func (c RemoteCall) Auth(urls string) ([]string, error) {
	switch {
	case c.URL != nil:
		return AuthFor(*c.URL, c.Creds)
	case !c.NeedsURL():
		return nil, nil
	}
	lines := strings.Split(strings.TrimSpace(urls), "\n")
	for _, line := range lines {
		r, err := ParseRemoteURL("the URL of remote "+c.Name, strings.TrimSpace(line))
		if err != nil {
			return nil, err
		}
		if err := c.Creds.checkRemote(r, "remote "+c.Name+"'s URL "+quote(r.URL)); err != nil {
			return nil, err
		}
	}
	return AuthEnv(c.Creds.For, c.Creds), nil
}

// Fetch fetches from remote (a name or URL), optionally one branch.
func Fetch(req api.GitFetchRequest, remote string) (Cmd, error) {
	args := []string{"fetch", "-q"}
	if req.Prune {
		args = append(args, "--prune")
	}
	return remoteBranch(args, remote, req.Branch, "")
}

// Pull pulls branch (the upstream by default) from remote.
func Pull(req api.GitPullRequest, remote string) (Cmd, error) {
	args := []string{"pull", "-q", "--no-edit"}
	if req.Rebase {
		args = append(args, "--rebase")
	} else {
		args = append(args, "--no-rebase")
	}
	if req.FFOnly {
		args = append(args, "--ff-only")
	}
	c, err := remoteBranch(args, remote, req.Branch, "")
	if err != nil {
		return Cmd{}, err
	}
	c.Env, err = Identity(req.GitIdentity)
	return c, err
}

// Push pushes branch (the current one by default) to remote.
func Push(req api.GitPushRequest, remote string) (Cmd, error) {
	args := []string{"push", "--porcelain"}
	if req.SetUpstream {
		args = append(args, "--set-upstream")
	}
	if req.Force {
		args = append(args, "--force-with-lease")
	}
	return remoteBranch(args, remote, req.Branch, "HEAD")
}

// remoteBranch ends args with remote and branch (or def) after
// --end-of-options.
func remoteBranch(args []string, remote, branch, def string) (Cmd, error) {
	args = append(args, "--end-of-options", remote)
	if branch != "" {
		if err := CheckRef("branch", branch); err != nil {
			return Cmd{}, err
		}
		args = append(args, branch)
	} else if def != "" {
		args = append(args, def)
	}
	return Cmd{Args: args}, nil
}
