package gitcmd

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestFailure(t *testing.T) {
	tests := []struct {
		name, op       string
		exit           int
		stdout, stderr string
		want           errdefs.Code
		says           string
	}{
		{"no git", "status", 127, "", "exec: git: not found\n", errdefs.CodeNoInterpreter, "no git"},
		{"not a repository", "status", 128, "", "fatal: not a git repository (or any of the parent directories): .git\n", errdefs.CodeGitNotRepo, "not a git repository"},
		{"no directory", "log", 128, "", "fatal: cannot change to '/nope': No such file or directory\n", errdefs.CodeGitNotRepo, "/nope"},
		{"local config outside", "config", 128, "", "fatal: --local can only be used inside a git repository\n", errdefs.CodeGitNotRepo, "--local"},
		{"wrong password", "clone", 128, "", "remote: Unauthorized\nfatal: Authentication failed for 'http://10.0.0.1:8080/r.git/'\n", errdefs.CodeGitAuth, "Authentication failed"},
		{"no credentials", "push", 128, "", "fatal: could not read Username for 'https://example.com': terminal prompts disabled\n", errdefs.CodeGitAuth, "could not read Username"},
		{"forbidden", "fetch", 128, "", "fatal: unable to access 'https://example.com/r.git/': The requested URL returned error: 403\n", errdefs.CodeGitAuth, "403"},
		{"ssh key", "clone", 128, "", "git@example.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n", errdefs.CodeGitAuth, "publickey"},
		{"repository 404", "clone", 128, "", "remote: Not found\nfatal: repository 'http://10.0.0.1:8080/nope.git/' not found\n", errdefs.CodeGitNoRemote, "not found"},
		{"no local repository", "clone", 128, "", "fatal: repository '/nope' does not exist\n", errdefs.CodeGitNoRemote, "/nope"},
		{"no remote", "push", 128, "", "fatal: 'upstream' does not appear to be a git repository\nfatal: Could not read from remote repository.\n", errdefs.CodeGitNoRemote, "upstream"},
		{"no such remote", "remote", 2, "", "error: No such remote: 'x'\n", errdefs.CodeGitNoRemote, "No such remote"},
		{"no remote branch", "pull", 1, "", "fatal: couldn't find remote ref nope\n", errdefs.CodeGitNoRemote, "nope"},
		{"clone branch", "clone", 128, "", "warning: Could not find remote branch nope to clone.\nfatal: Remote branch nope not found in upstream origin\n", errdefs.CodeGitNoRemote, "nope"},
		{"merge conflict", "pull", 1, "Auto-merging a.txt\nCONFLICT (content): Merge conflict in a.txt\nAutomatic merge failed; fix conflicts and then commit the result.\n", "",
			errdefs.CodeGitConflict, "conflicts in a.txt"},
		{"rebase conflict", "pull", 1, "", "error: could not apply 1234567... change\nhint: Resolve all conflicts manually\n", errdefs.CodeGitConflict, "could not apply"},
		{"unmerged", "pull", 128, "", "error: Pulling is not possible because you have unmerged files.\n", errdefs.CodeGitConflict, "unmerged"},
		{"nothing to commit", "commit", 1, "On branch main\nnothing to commit, working tree clean\n", "", errdefs.CodeGitNothing, "nothing to commit"},
		{"nothing staged", "commit", 1, "On branch main\nChanges not staged for commit:\n\tmodified:   a\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")\n", "", errdefs.CodeGitNothing, "nothing"},
		{"identity", "commit", 128, "", "Author identity unknown\n\n*** Please tell me who you are.\n\nfatal: unable to auto-detect email address (got 'root@x.(none)')\n", errdefs.CodeGitFailed, "auto-detect"},
		{"rejected", "push", 1, "To /srv/r\n!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\nDone\n", "error: failed to push some refs to '/srv/r'\nhint: Updates were rejected\n", errdefs.CodeGitFailed, "failed to push"},
		{"unknown revision", "log", 128, "", "fatal: bad revision 'nope'\n", errdefs.CodeGitFailed, "bad revision"},
		{"pathspec", "add", 128, "", "fatal: pathspec '--exec=x' did not match any files\n", errdefs.CodeGitFailed, "--exec=x"},
		{"terminal escapes", "add", 128, "", "fatal: \x1b[31mred\x1b[0m\n", errdefs.CodeGitFailed, `\x1b[31mred`},
		// A diff's stdout is data: a file that says "CONFLICT (" is no conflict.
		{"data on stdout", "diff", 128, "+CONFLICT (content): Merge conflict in a\n+not a git repository", "fatal: bad object x\n", errdefs.CodeGitFailed, "bad object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Failure(tt.op, Result{Stdout: []byte(tt.stdout), Stderr: tt.stderr, ExitCode: tt.exit})
			e := errdefs.As(err)
			if e.Code != tt.want || !strings.Contains(e.Message, tt.says) {
				t.Errorf("Failure = %s %q, want %s saying %q", e.Code, e.Message, tt.want, tt.says)
			}
			if strings.ContainsAny(e.Message, "\x1b\n") {
				t.Errorf("message %q holds a raw control character", e.Message)
			}
		})
	}
	if e := errdefs.As(Failure("push", Result{ExitCode: 1, Stderr: "error: failed to push some refs to 'x'"})); !strings.Contains(e.FixNote, "pull") {
		t.Errorf("a rejected push's fix note %q does not say to pull", e.FixNote)
	}
	if e := errdefs.As(Failure("commit", Result{ExitCode: 128, Stderr: "*** Please tell me who you are."})); e.Fix["author_name"] == nil {
		t.Errorf("an unknown identity's fix %v does not name author_name", e.Fix)
	}
}
