package gitcmd

// The S-codes of git's failures, from its exit status and its messages
// (git runs with LC_ALL=C, so they are English). What git wrote is the
// sandbox's text: it is escaped and clipped before it goes into a message.

import (
	"regexp"
	"strings"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Result is a finished run of git.
type Result struct {
	Stdout    []byte
	Stderr    string
	ExitCode  int
	StdoutCut bool
}

// exitNotFound is the agent's status for a command it cannot find, with
// stderr "exec: git: not found".
const exitNotFound = 127

// failure is one kind of failure: any of its phrases in git's output
// (lowercased) makes it that code.
type failure struct {
	code    errdefs.Code
	phrases []string
	what    string
	fix     string
	// re, when set, matches too.
	re *regexp.Regexp
}

// failures are tried in order; the first that matches wins.
var failures = []failure{
	{errdefs.CodeGitNotRepo, []string{"not a git repository", "cannot change to", "only be used inside a git repository"},
		"is not in a git repository", "init or clone a repository there (sandbox::git::init, sandbox::git::clone), or give the repository's directory as path", nil},
	{errdefs.CodeGitAuth, []string{"authentication failed", "could not read username", "could not read password",
		"terminal prompts disabled", "permission denied (publickey", "access denied", "returned error: 401", "returned error: 403",
		"invalid username or password", "invalid credentials"},
		"was refused by the remote: authentication failed", "check username and password, or the token and its scopes; an ssh remote needs a key in the sandbox", nil},
	{errdefs.CodeGitNoRemote, []string{"repository not found", "does not appear to be a git repository", "returned error: 404",
		"no such remote", "couldn't find remote ref", "not found in upstream", "remote repository is empty"},
		"found no such remote, repository or remote branch", "check the URL, the remote's name (sandbox::git::remote lists them) and the branch",
		regexp.MustCompile(`repository '[^']*' (not found|does not exist)`)},
	{errdefs.CodeGitConflict, []string{"conflict (", "automatic merge failed", "could not apply", "unmerged files",
		"resolve your current index first", "fix conflicts", "unresolved conflict"},
		"stopped on conflicts", "resolve the conflicted files (sandbox::git::status lists them), then add and commit; or reset with mode hard to give up", nil},
}

// special are failures of S275 worth a fix of their own.
var special = []struct {
	phrases []string
	fix     string
	patch   map[string]any
}{
	{[]string{"please tell me who you are", "author identity unknown", "empty ident name", "unable to auto-detect email"},
		"set author_name and author_email, or user.name and user.email with sandbox::git::config", map[string]any{"author_name": "…", "author_email": "…"}},
	{[]string{"[rejected]", "failed to push some refs", "non-fast-forward", "fetch first"},
		"the remote has commits this branch lacks: pull, then push again (or push with force)", nil},
	{[]string{"dubious ownership"},
		"the repository belongs to another user: run as that user (user)", nil},
	{[]string{"would be overwritten", "local changes"},
		"commit, restore or reset the local changes first, or use force", nil},
}

// messagesOnStdout are the operations whose failures git tells on
// stdout; the others' stdout is data (a file's diff), never read for
// messages.
var messagesOnStdout = map[string]bool{"commit": true, "pull": true}

// Failure is the error of a run of git for op that did not succeed.
func Failure(op string, r Result) error {
	out := strings.ToLower(r.Stderr)
	if messagesOnStdout[op] {
		out += "\n" + strings.ToLower(string(r.Stdout))
	}
	if r.ExitCode == exitNotFound && strings.Contains(r.Stderr, "exec: git:") {
		return errdefs.New(errdefs.CodeNoInterpreter, "the sandbox's image has no git").
			WithFix(nil, "use an image with git, or install it")
	}
	if op == "commit" && r.ExitCode == 1 && containsAny(out, "nothing to commit", "nothing added to commit", "no changes added to commit") {
		return errdefs.New(errdefs.CodeGitNothing, "git commit: nothing to commit").
			WithFix(map[string]any{"all": true}, "add the changes first (sandbox::git::add), set all, or allow_empty")
	}
	for _, f := range failures {
		if containsAny(out, f.phrases...) || f.re != nil && f.re.MatchString(out) {
			msg := "git " + op + " " + f.what + ": " + gist(r)
			if f.code == errdefs.CodeGitConflict {
				if files := conflicted(r); files != "" {
					msg += " (conflicts in " + files + ")"
				}
			}
			return errdefs.New(f.code, "%s", msg).WithFix(nil, f.fix)
		}
	}
	e := errdefs.New(errdefs.CodeGitFailed, "git %s failed (exit %d): %s", op, r.ExitCode, gist(r))
	for _, s := range special {
		if containsAny(out, s.phrases...) {
			return e.WithFix(s.patch, s.fix)
		}
	}
	return e
}

func containsAny(s string, phrases ...string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// gist is what git said on stderr (on stdout when stderr is empty),
// without its hints, on one line: escaped, and clipped to its end.
func gist(r Result) string {
	text := strings.TrimSpace(r.Stderr)
	if text == "" {
		text = strings.TrimSpace(string(r.Stdout))
	}
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "hint:") {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		return "no message"
	}
	return safetext.Tail(strings.Join(keep, "; "), safetext.MaxLine)
}

// conflicted lists the files of "Merge conflict in F" lines.
func conflicted(r Result) string {
	var files []string
	for _, line := range strings.Split(string(r.Stdout)+"\n"+r.Stderr, "\n") {
		if _, f, ok := strings.Cut(line, "Merge conflict in "); ok && len(files) < 10 {
			files = append(files, strings.TrimSpace(f))
		}
	}
	return safetext.Line(strings.Join(files, ", "), safetext.MaxLine)
}
