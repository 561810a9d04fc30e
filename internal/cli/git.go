package cli

// `hutch git ID OP …`: git inside a sandbox, one subcommand per
// sandbox::git operation. Its flags follow git's where they can (-C, -m,
// -b, -u); --json prints the function's result as it is. Passwords and
// tokens come from stdin or the environment, never from the command line.

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// gitFlags are the flags of every git subcommand.
type gitFlags struct {
	id      string
	path    string
	user    string
	env     []string
	timeout time.Duration
	asJSON  bool
}

// target is the GitTarget of the flags.
func (f *gitFlags) target() (api.GitTarget, error) {
	ms, err := timeoutMs(f.timeout)
	return api.GitTarget{SandboxID: f.id, Path: f.path, User: f.user, Env: parseEnv(f.env), TimeoutMs: ms}, err
}

// gitCmd is `hutch git ID OP …`. The sandbox's id comes before the
// operation, as git's -C does, so the command parses its own arguments.
func (a *app) gitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git ID OP [ARGS]",
		Short: "Run git in a sandbox: " + strings.Join(api.GitOps, ", "),
		Long: `Run git inside a sandbox, one operation at a time (sandbox::git::*): git runs
there as the image's user (--user), in the repository of -C (the image's
working directory by default), with its arguments as an argument vector, never
through a shell. Credentials for clone, fetch, pull and push are read from
stdin (--password-stdin, --token-stdin) or $HUTCH_GIT_PASSWORD / $HUTCH_GIT_TOKEN,
and handed to git for that one call only, for the URLs under --credentials-for
(by default the host of a URL given on the command line; a remote given by
name, whose URL the sandbox can change, needs it).

Run 'hutch git ID --help' for the operations, 'hutch git ID OP --help' for one.`,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("hutch git needs a sandbox id and an operation")
		}
		if args[0] == "-h" || args[0] == "--help" {
			return cmd.Help()
		}
		ops := a.gitOps(args[0])
		ops.SetArgs(append([]string{"git"}, args...))
		ops.SetIn(a.stdin)
		ops.SetOut(a.stdout)
		ops.SetErr(a.stderr)
		return ops.ExecuteContext(cmd.Context())
	}
	return cmd
}

// gitOps is the tree of operations on sandbox id, under "hutch git ID"
// so that their usage reads as typed: it runs on "git ID OP …".
func (a *app) gitOps(id string) *cobra.Command {
	f := &gitFlags{id: id}
	top := &cobra.Command{Use: "hutch", SilenceErrors: true, SilenceUsage: true}
	top.CompletionOptions.DisableDefaultCmd = true
	git := &cobra.Command{Use: "git"}
	root := &cobra.Command{
		Use:   id + " OP",
		Short: "git in sandbox " + id,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("hutch git needs an operation: %s", strings.Join(api.GitOps, ", "))
		},
	}
	top.AddCommand(git)
	git.AddCommand(root)
	pf := root.PersistentFlags()
	pf.StringVarP(&f.path, "path", "C", "", "the repository's directory in the sandbox (absolute; the image's working directory by default)")
	pf.StringVar(&f.user, "user", "", "run git as this user (name or uid[:gid]) instead of the image's")
	pf.StringArrayVarP(&f.env, "env", "e", nil, "KEY=VAL added to git's environment (repeatable)")
	pf.DurationVar(&f.timeout, "timeout", 0, "bound the operation (the daemon's default otherwise)")
	pf.BoolVar(&f.asJSON, "json", false, "print the function's JSON result")
	root.AddCommand(a.gitInitCmd(f), a.gitCloneCmd(f), a.gitStatusCmd(f), a.gitAddCmd(f), a.gitCommitCmd(f), a.gitDiffCmd(f),
		a.gitLogCmd(f), a.gitBranchCmd(f), a.gitCheckoutCmd(f), a.gitResetCmd(f), a.gitRestoreCmd(f), a.gitRemoteCmd(f),
		a.gitConfigCmd(f), a.gitFetchCmd(f), a.gitPullCmd(f), a.gitPushCmd(f))
	return top
}

// gitRun makes a subcommand's RunE: call builds the request from the
// target and arguments and calls the daemon; its result is printed as
// JSON with --json, else by human (nil: nothing).
func gitRun[Resp any](f *gitFlags, call func(cmd *cobra.Command, t api.GitTarget, args []string) (Resp, error), human func(Resp) error) func(*cobra.Command, []string) error {
	return action(func(cmd *cobra.Command, args []string) error {
		t, err := f.target()
		if err != nil {
			return err
		}
		res, err := call(cmd, t, args)
		switch {
		case err != nil:
			return err
		case f.asJSON:
			return printJSON(cmd.OutOrStdout(), res)
		case human != nil:
			return human(res)
		}
		return nil
	})
}

// gitAuth reads a call's credentials: --username, a password or token
// from stdin (one line) or the environment.
type gitAuth struct {
	username                  string
	passwordStdin, tokenStdin bool
	credentialsFor            string
}

func (g *gitAuth) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.username, "username", "", "the user name for an http(s) remote")
	cmd.Flags().BoolVar(&g.passwordStdin, "password-stdin", false, "read the password from stdin (else $HUTCH_GIT_PASSWORD)")
	cmd.Flags().BoolVar(&g.tokenStdin, "token-stdin", false, "read a token from stdin (else $HUTCH_GIT_TOKEN)")
	cmd.Flags().StringVar(&g.credentialsFor, "credentials-for", "", "the host (https) or http(s) URL prefix the credentials may go to; needed for a remote given by name")
}

func (a *app) readAuth(g *gitAuth) (api.GitAuth, error) {
	auth := api.GitAuth{Username: g.username, Password: api.Secret(a.getenv("HUTCH_GIT_PASSWORD")), Token: api.Secret(a.getenv("HUTCH_GIT_TOKEN")),
		CredentialsFor: g.credentialsFor}
	if g.passwordStdin && g.tokenStdin {
		return auth, usagef("give --password-stdin or --token-stdin, not both")
	}
	if g.passwordStdin || g.tokenStdin {
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return auth, err
		}
		secret := api.Secret(strings.TrimRight(line, "\r\n"))
		if g.passwordStdin {
			auth.Password, auth.Token = secret, ""
		} else {
			auth.Token, auth.Password = secret, ""
		}
	}
	return auth, nil
}

func (a *app) gitInitCmd(f *gitFlags) *cobra.Command {
	var req api.GitInitRequest
	cmd := &cobra.Command{Use: "init [PATH]", Short: "Create a repository (at PATH, -C or the working directory)", Args: cobra.MaximumNArgs(1)}
	cmd.Flags().BoolVar(&req.Bare, "bare", false, "a bare repository")
	cmd.Flags().StringVarP(&req.InitialBranch, "initial-branch", "b", "", "the first branch's name")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitInitResponse, error) {
		req.GitTarget = t
		if len(args) == 1 {
			req.Path = args[0]
		}
		return a.client().GitInit(cmd.Context(), req)
	}, func(r api.GitInitResponse) error { return a.line("initialized %s", r.Path) })
	return cmd
}

func (a *app) gitCloneCmd(f *gitFlags) *cobra.Command {
	var req api.GitCloneRequest
	var auth gitAuth
	cmd := &cobra.Command{Use: "clone URL [PATH]", Short: "Clone a repository (http(s), ssh, git, or a path in the sandbox)", Args: cobra.RangeArgs(1, 2)}
	cmd.Flags().StringVarP(&req.Branch, "branch", "b", "", "check out this branch")
	cmd.Flags().IntVar(&req.Depth, "depth", 0, "a shallow clone of this many commits")
	auth.flags(cmd)
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitCloneResponse, error) {
		var err error
		req.GitTarget, req.URL = t, args[0]
		if len(args) == 2 {
			req.Path = args[1]
		}
		if req.GitAuth, err = a.readAuth(&auth); err != nil {
			return api.GitCloneResponse{}, err
		}
		return a.client().GitClone(cmd.Context(), req)
	}, func(r api.GitCloneResponse) error {
		return a.line("cloned %s into %s (%s at %.7s)", r.URL, r.Path, orDetached(r.Branch), r.Commit)
	})
	return cmd
}

func (a *app) gitStatusCmd(f *gitFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "status", Short: "Show the branch and each changed, untracked or conflicted file", Args: cobra.NoArgs}
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, _ []string) (api.GitStatus, error) {
		return a.client().GitStatus(cmd.Context(), api.GitStatusRequest{GitTarget: t})
	}, a.printStatus)
	return cmd
}

func (a *app) gitAddCmd(f *gitFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "add [PATH...]", Short: "Stage paths (literally), or every change", Args: cobra.ArbitraryArgs}
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		return a.client().GitAdd(cmd.Context(), api.GitAddRequest{GitTarget: t, Paths: args})
	}, a.printStatus)
	return cmd
}

func (a *app) gitCommitCmd(f *gitFlags) *cobra.Command {
	var req api.GitCommitRequest
	cmd := &cobra.Command{Use: "commit -m MESSAGE", Short: "Commit the staged changes", Args: cobra.NoArgs}
	fl := cmd.Flags()
	fl.StringVarP(&req.Message, "message", "m", "", "the commit message")
	fl.BoolVarP(&req.All, "all", "a", false, "stage every change of tracked files first")
	fl.BoolVar(&req.AllowEmpty, "allow-empty", false, "commit even with no change")
	fl.BoolVar(&req.Amend, "amend", false, "replace the last commit")
	identityFlags(cmd, &req.GitIdentity)
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, _ []string) (api.GitCommitResponse, error) {
		req.GitTarget = t
		return a.client().GitCommit(cmd.Context(), req)
	}, func(r api.GitCommitResponse) error {
		return a.line("[%.7s] %s", r.Commit.Hash, safetext.Escape(r.Commit.Subject))
	})
	return cmd
}

// identityFlags registers --author-name and --author-email into id.
func identityFlags(cmd *cobra.Command, id *api.GitIdentity) {
	cmd.Flags().StringVar(&id.AuthorName, "author-name", "", "the author (and committer) of new commits")
	cmd.Flags().StringVar(&id.AuthorEmail, "author-email", "", "their email")
}

// refAndPaths splits "[REF] [-- PATH...]".
func refAndPaths(cmd *cobra.Command, args []string) (string, []string, error) {
	dash := cmd.ArgsLenAtDash()
	before, paths := args, []string(nil)
	if dash >= 0 {
		before, paths = args[:dash], args[dash:]
	}
	switch len(before) {
	case 0:
		return "", paths, nil
	case 1:
		return before[0], paths, nil
	}
	return "", nil, usagef("give at most one revision; put paths after --")
}

func (a *app) gitDiffCmd(f *gitFlags) *cobra.Command {
	var req api.GitDiffRequest
	cmd := &cobra.Command{Use: "diff [REF] [-- PATH...]", Short: "Show changes: unstaged, staged (--staged), or against a revision or range", Args: cobra.ArbitraryArgs}
	cmd.Flags().BoolVar(&req.Staged, "staged", false, "the staged changes")
	cmd.Flags().BoolVar(&req.NameStatus, "name-status", false, "list the changed files instead")
	cmd.Flags().IntVar(&req.MaxBytes, "max-bytes", 0, "cut the diff here (1 MiB by default)")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitDiffResponse, error) {
		var err error
		req.GitTarget = t
		if req.Ref, req.Paths, err = refAndPaths(cmd, args); err != nil {
			return api.GitDiffResponse{}, err
		}
		return a.client().GitDiff(cmd.Context(), req)
	}, func(r api.GitDiffResponse) error {
		if req.NameStatus {
			t := newTable(a.stdout, "STATUS", "PATH", "FROM")
			for _, file := range r.Files {
				t.row(file.Status, file.Path, file.RenamedFrom)
			}
			return t.flush()
		}
		io.WriteString(a.stdout, r.Diff)
		if r.Truncated {
			fmt.Fprintf(a.stderr, "hutch: the diff is longer than %d bytes and was cut (--max-bytes)\n", len(r.Diff))
		}
		return nil
	})
	return cmd
}

func (a *app) gitLogCmd(f *gitFlags) *cobra.Command {
	var req api.GitLogRequest
	cmd := &cobra.Command{Use: "log [REF] [-- PATH...]", Short: "List commits, newest first", Args: cobra.ArbitraryArgs}
	cmd.Flags().IntVarP(&req.MaxCount, "max-count", "n", 0, "at most this many (50 by default)")
	cmd.Flags().IntVar(&req.Skip, "skip", 0, "skip this many first")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitLogResponse, error) {
		var err error
		req.GitTarget = t
		if req.Ref, req.Paths, err = refAndPaths(cmd, args); err != nil {
			return api.GitLogResponse{}, err
		}
		return a.client().GitLog(cmd.Context(), req)
	}, func(r api.GitLogResponse) error {
		t := newTable(a.stdout, "COMMIT", "DATE", "AUTHOR", "SUBJECT")
		for _, c := range r.Commits {
			t.row(c.Hash[:min(7, len(c.Hash))], c.Date, c.Author, c.Subject)
		}
		return t.flush()
	})
	return cmd
}

func (a *app) gitBranchCmd(f *gitFlags) *cobra.Command {
	var req api.GitBranchRequest
	var force bool
	cmd := &cobra.Command{Use: "branch [NAME [START]]", Short: "List branches, after creating NAME (at START) or deleting it (-d, -D)", Args: cobra.MaximumNArgs(2)}
	cmd.Flags().BoolVarP(&req.Delete, "delete", "d", false, "delete NAME")
	cmd.Flags().BoolVarP(&force, "force-delete", "D", false, "delete NAME even if it is not merged")
	cmd.Flags().BoolVarP(&req.Force, "force", "f", false, "move NAME to START if it exists")
	cmd.Flags().BoolVarP(&req.Remotes, "all", "a", false, "list remote-tracking branches too")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitBranchResponse, error) {
		req.GitTarget = t
		if force {
			req.Delete, req.Force = true, true
		}
		if len(args) > 0 {
			req.Name = args[0]
		}
		if len(args) > 1 {
			req.StartPoint = args[1]
		}
		return a.client().GitBranch(cmd.Context(), req)
	}, func(r api.GitBranchResponse) error {
		t := newTable(a.stdout, "", "BRANCH", "COMMIT", "UPSTREAM")
		for _, b := range r.Branches {
			mark := " "
			if b.Current {
				mark = "*"
			}
			t.row(mark, b.Name, b.Commit[:min(7, len(b.Commit))], tracking(b))
		}
		return t.flush()
	})
	return cmd
}

// tracking is a branch's upstream and how far from it, as git branch -vv
// says it.
func tracking(b api.GitBranch) string {
	if b.Upstream == "" {
		return ""
	}
	var parts []string
	switch {
	case b.Gone:
		parts = append(parts, "gone")
	default:
		if b.Ahead > 0 {
			parts = append(parts, fmt.Sprintf("ahead %d", b.Ahead))
		}
		if b.Behind > 0 {
			parts = append(parts, fmt.Sprintf("behind %d", b.Behind))
		}
	}
	if len(parts) == 0 {
		return "[" + b.Upstream + "]"
	}
	return "[" + b.Upstream + ": " + strings.Join(parts, ", ") + "]"
}

func (a *app) gitCheckoutCmd(f *gitFlags) *cobra.Command {
	var req api.GitCheckoutRequest
	cmd := &cobra.Command{Use: "checkout [-b] REF [START]", Short: "Switch to a branch, tag or commit, or create a branch (-b) at START", Args: cobra.RangeArgs(1, 2)}
	cmd.Flags().BoolVarP(&req.Create, "create", "b", false, "create branch REF first")
	cmd.Flags().BoolVarP(&req.Force, "force", "f", false, "throw away local changes in the way")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		req.GitTarget, req.Ref = t, args[0]
		if len(args) == 2 {
			req.StartPoint = args[1]
		}
		return a.client().GitCheckout(cmd.Context(), req)
	}, a.printStatus)
	return cmd
}

func (a *app) gitResetCmd(f *gitFlags) *cobra.Command {
	var req api.GitResetRequest
	var soft, hard bool
	cmd := &cobra.Command{Use: "reset [REF] [-- PATH...]", Short: "Move the current branch to REF (--soft, --hard; mixed by default), or unstage paths", Args: cobra.ArbitraryArgs}
	cmd.Flags().BoolVar(&soft, "soft", false, "keep the index and work tree")
	cmd.Flags().BoolVar(&hard, "hard", false, "reset the index and work tree too, throwing changes away")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		var err error
		req.GitTarget = t
		if req.Ref, req.Paths, err = refAndPaths(cmd, args); err != nil {
			return api.GitStatus{}, err
		}
		switch {
		case soft && hard:
			return api.GitStatus{}, usagef("give --soft or --hard, not both")
		case soft:
			req.Mode = "soft"
		case hard:
			req.Mode = "hard"
		}
		return a.client().GitReset(cmd.Context(), req)
	}, a.printStatus)
	return cmd
}

func (a *app) gitRestoreCmd(f *gitFlags) *cobra.Command {
	var req api.GitRestoreRequest
	cmd := &cobra.Command{Use: "restore PATH...", Short: "Restore files in the work tree, or unstage them (--staged)", Args: cobra.MinimumNArgs(1)}
	cmd.Flags().BoolVarP(&req.Staged, "staged", "S", false, "restore the index")
	cmd.Flags().BoolVarP(&req.Worktree, "worktree", "W", false, "restore the work tree (the default without --staged)")
	cmd.Flags().StringVarP(&req.Source, "source", "s", "", "restore from this revision")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		req.GitTarget, req.Paths = t, args
		return a.client().GitRestore(cmd.Context(), req)
	}, a.printStatus)
	return cmd
}

func (a *app) gitRemoteCmd(f *gitFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "remote [add NAME URL | set-url NAME URL | remove NAME]", Short: "List remotes, after adding, changing or removing one", Args: cobra.ArbitraryArgs}
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitRemoteResponse, error) {
		req := api.GitRemoteRequest{GitTarget: t}
		switch {
		case len(args) == 0:
		case len(args) == 3 && (args[0] == "add" || args[0] == "set-url"):
			req.Name, req.URL, req.Overwrite = args[1], args[2], args[0] == "set-url"
		case len(args) == 2 && (args[0] == "remove" || args[0] == "rm"):
			req.Name, req.Remove = args[1], true
		default:
			return api.GitRemoteResponse{}, usagef("usage: remote [add NAME URL | set-url NAME URL | remove NAME]")
		}
		return a.client().GitRemote(cmd.Context(), req)
	}, func(r api.GitRemoteResponse) error {
		t := newTable(a.stdout, "REMOTE", "URL", "PUSH URL")
		for _, rm := range r.Remotes {
			t.row(rm.Name, rm.URL, rm.PushURL)
		}
		return t.flush()
	})
	return cmd
}

func (a *app) gitConfigCmd(f *gitFlags) *cobra.Command {
	var req api.GitConfigRequest
	var global bool
	cmd := &cobra.Command{Use: "config [KEY [VALUE]]", Short: "Set, get (KEY), unset (--unset) or list config", Args: cobra.MaximumNArgs(2)}
	cmd.Flags().BoolVar(&req.Unset, "unset", false, "remove KEY")
	cmd.Flags().BoolVar(&global, "global", false, "the user's config, not the repository's")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitConfigResponse, error) {
		req.GitTarget = t
		if global {
			req.Scope = "global"
		}
		if len(args) > 0 {
			req.Key = args[0]
		}
		if len(args) > 1 {
			req.Value = &args[1]
		}
		return a.client().GitConfig(cmd.Context(), req)
	}, func(r api.GitConfigResponse) error {
		for _, e := range r.Entries {
			if req.Key != "" {
				fmt.Fprintln(a.stdout, safetext.Escape(e.Value))
			} else {
				fmt.Fprintln(a.stdout, safetext.Escape(e.Key+"="+e.Value))
			}
		}
		return nil
	})
	return cmd
}

// remoteCmd is the command OP [REMOTE [BRANCH]] of a call to a remote
// (fetch, pull, push) with the credential flags, and the function that
// fills rc from its arguments and credentials.
func (a *app) remoteCmd(op, short string, rc *api.GitRemoteCall) (*cobra.Command, func(args []string) error) {
	var auth gitAuth
	cmd := &cobra.Command{Use: op + " [REMOTE [BRANCH]]", Short: short, Args: cobra.MaximumNArgs(2)}
	auth.flags(cmd)
	return cmd, func(args []string) error {
		if len(args) > 0 {
			rc.Remote = args[0]
		}
		if len(args) > 1 {
			rc.Branch = args[1]
		}
		var err error
		rc.GitAuth, err = a.readAuth(&auth)
		return err
	}
}

func (a *app) gitFetchCmd(f *gitFlags) *cobra.Command {
	var req api.GitFetchRequest
	cmd, prepare := a.remoteCmd("fetch", "Fetch from a remote (origin by default)", &req.GitRemoteCall)
	cmd.Flags().BoolVarP(&req.Prune, "prune", "p", false, "remove remote-tracking branches that are gone")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		req.GitTarget = t
		if err := prepare(args); err != nil {
			return api.GitStatus{}, err
		}
		return a.client().GitFetch(cmd.Context(), req)
	}, a.printStatus)
	return cmd
}

func (a *app) gitPullCmd(f *gitFlags) *cobra.Command {
	var req api.GitPullRequest
	cmd, prepare := a.remoteCmd("pull", "Fetch and merge (or --rebase) a branch of a remote (the upstream by default)", &req.GitRemoteCall)
	cmd.Flags().BoolVar(&req.Rebase, "rebase", false, "rebase onto it instead of merging")
	cmd.Flags().BoolVar(&req.FFOnly, "ff-only", false, "refuse anything but a fast-forward")
	identityFlags(cmd, &req.GitIdentity)
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitStatus, error) {
		req.GitTarget = t
		if err := prepare(args); err != nil {
			return api.GitStatus{}, err
		}
		return a.client().GitPull(cmd.Context(), req)
	}, a.printStatus)
	return cmd
}

func (a *app) gitPushCmd(f *gitFlags) *cobra.Command {
	var req api.GitPushRequest
	cmd, prepare := a.remoteCmd("push", "Push a branch (the current one by default) to a remote (origin by default)", &req.GitRemoteCall)
	cmd.Flags().BoolVarP(&req.SetUpstream, "set-upstream", "u", false, "make it the branch's upstream")
	cmd.Flags().BoolVarP(&req.Force, "force", "f", false, "overwrite the remote branch if it is where this repository last saw it")
	cmd.RunE = gitRun(f, func(cmd *cobra.Command, t api.GitTarget, args []string) (api.GitPushResponse, error) {
		req.GitTarget = t
		if err := prepare(args); err != nil {
			return api.GitPushResponse{}, err
		}
		return a.client().GitPush(cmd.Context(), req)
	}, func(r api.GitPushResponse) error {
		t := newTable(a.stdout, "STATUS", "REF", "SUMMARY")
		for _, ref := range r.Refs {
			t.row(ref.Status, ref.Local+" -> "+ref.Remote, ref.Summary)
		}
		return t.flush()
	})
	return cmd
}

// line prints one line of text made of what the sandbox said, escaped.
func (a *app) line(format string, args ...any) error {
	_, err := fmt.Fprintln(a.stdout, safetext.Escape(fmt.Sprintf(format, args...)))
	return err
}

func orDetached(branch string) string {
	if branch == "" {
		return "detached HEAD"
	}
	return branch
}

// statusLetter is a file state's letter in git status --short.
var statusLetter = map[string]string{
	api.GitUnmodified: " ", api.GitModified: "M", api.GitTypeChanged: "T", api.GitAdded: "A", api.GitDeleted: "D",
	api.GitRenamed: "R", api.GitCopied: "C", api.GitUnmerged: "U", api.GitUntracked: "?",
}

// printStatus prints a status as git status --short --branch does (the
// upstream as git branch -vv shows it).
func (a *app) printStatus(st api.GitStatus) error {
	head := orDetached(st.Branch)
	if up := tracking(api.GitBranch{Upstream: st.Upstream, Ahead: st.Ahead, Behind: st.Behind}); up != "" {
		head += " " + up
	}
	if err := a.line("## %s", head); err != nil {
		return err
	}
	for _, file := range st.Files {
		name := file.Path
		if file.RenamedFrom != "" {
			name = file.RenamedFrom + " -> " + file.Path
		}
		if err := a.line("%s%s %s", statusLetter[file.Index], statusLetter[file.Worktree], name); err != nil {
			return err
		}
	}
	if st.Truncated {
		fmt.Fprintln(a.stderr, "hutch: more files than the daemon's output cap: the list is cut")
	}
	return nil
}
