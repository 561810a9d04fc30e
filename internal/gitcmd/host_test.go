package gitcmd

// The commands against the host's git (skipped without one): what the
// builders make is what git takes, the parsers read what it writes, and
// credentials work, stay out of the repository, and fail as S271.

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// hostGit runs commands as the manager does in a sandbox, on the host.
type hostGit struct {
	t    *testing.T
	home string
}

func newHostGit(t *testing.T) *hostGit {
	testutil.RequiresBinary(t, "git")
	return &hostGit{t: t, home: t.TempDir()}
}

// run runs c in dir and returns how it ended.
func (h *hostGit) run(dir string, c Cmd) Result {
	h.t.Helper()
	if c.Dir != "" {
		dir = c.Dir
	}
	cmd := exec.Command("git", c.Argv(dir)[1:]...)
	cmd.Dir = "/"
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + h.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"}, BaseEnv...), c.Env...)
	cmd.Stdin = bytes.NewReader(c.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatal(err)
	}
	return Result{Stdout: stdout.Bytes(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
}

// ok runs c in dir and fails the test unless git succeeds.
func (h *hostGit) ok(dir string, c Cmd) Result {
	h.t.Helper()
	r := h.run(dir, c)
	if r.ExitCode != 0 {
		h.t.Fatalf("git %q: %v", c.Args, Failure("test", r))
	}
	return r
}

func (h *hostGit) status(dir string) api.GitStatus {
	h.t.Helper()
	st, err := ParseStatus(h.ok(dir, Status()).Stdout, false)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHostGitLocal(t *testing.T) {
	h := newHostGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	h.ok("/", must(Init(api.GitInitRequest{InitialBranch: "main"}, dir)))
	if r := h.run(dir, LastCommit()); r.ExitCode == 0 || !strings.Contains(r.Stderr, "does not have any commits yet") {
		t.Errorf("log of an empty repository: %+v (the manager answers no commits on this message)", r)
	}
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	write(t, filepath.Join(dir, "b c.txt"), "b\n")
	h.ok(dir, must(Add(nil)))
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "first\n\nbody"})))
	if r := h.run(dir, must(Commit(api.GitCommitRequest{Message: "again"}))); !errdefs.Is(Failure("commit", r), errdefs.CodeGitNothing) {
		t.Errorf("a commit of nothing: %v", Failure("commit", r))
	}

	// Rename, change, untracked; the status as porcelain v2 says it.
	h.ok(dir, Cmd{Args: []string{"mv", "a.txt", "renamed.txt"}})
	write(t, filepath.Join(dir, "b c.txt"), "b\nmore\n")
	write(t, filepath.Join(dir, "new.txt"), "n\n")
	st := h.status(dir)
	if st.Branch != "main" || st.Commit == "" || st.Clean || len(st.Files) != 3 {
		t.Fatalf("status: %+v", st)
	}
	if f := st.Files[1]; f.Path != "renamed.txt" || f.RenamedFrom != "a.txt" || f.Status != "renamed" || !f.Staged {
		t.Errorf("the rename: %+v", f)
	}
	if f := st.Files[2]; f.Path != "new.txt" || !f.Untracked {
		t.Errorf("the untracked file: %+v", f)
	}
	r := h.ok(dir, must(DiffNameStatus(api.GitDiffRequest{Staged: true})))
	if files, err := ParseNameStatus(r.Stdout, false); err != nil || len(files) != 1 || files[0].Status != "R" || files[0].RenamedFrom != "a.txt" {
		t.Errorf("staged name-status: %+v, %v", files, err)
	}
	if d := string(h.ok(dir, must(Diff(api.GitDiffRequest{Paths: []string{"b c.txt"}}, 0))).Stdout); !strings.Contains(d, "+more") {
		t.Errorf("diff of b c.txt:\n%s", d)
	}
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "second", All: true, GitIdentity: api.GitIdentity{AuthorName: "Ann", AuthorEmail: "ann@example.com"}})))
	if err := os.Remove(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatal(err)
	}
	commits, err := ParseLog(h.ok(dir, must(Log(api.GitLogRequest{}))).Stdout, false)
	if err != nil || len(commits) != 2 || commits[0].Subject != "second" || commits[0].Author != "Ann" || commits[1].Subject != "first" ||
		len(commits[0].Parents) != 1 || commits[0].Parents[0] != commits[1].Hash {
		t.Fatalf("log: %+v, %v", commits, err)
	}

	// Branches, and a conflict between them.
	h.ok(dir, must(BranchChange(api.GitBranchRequest{Name: "side", StartPoint: "HEAD~1"})))
	branches, current, err := ParseBranches(h.ok(dir, Branches(false)).Stdout)
	if err != nil || current != "main" || len(branches) != 2 || branches[1].Name != "side" || branches[1].Commit != commits[1].Hash {
		t.Fatalf("branches: %q %+v %v", current, branches, err)
	}
	h.ok(dir, must(Checkout(api.GitCheckoutRequest{Ref: "side"})))
	write(t, filepath.Join(dir, "b c.txt"), "b\nother\n")
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "side", All: true})))
	h.ok(dir, must(Checkout(api.GitCheckoutRequest{Ref: "main"})))
	r = h.run(dir, Cmd{Args: []string{"merge", "side"}})
	if err := Failure("pull", r); !errdefs.Is(err, errdefs.CodeGitConflict) || !strings.Contains(err.Error(), "b c.txt") {
		t.Errorf("merge conflict: %v", err)
	}
	st = h.status(dir)
	if len(st.Files) != 1 || !st.Files[0].Conflicted || st.Files[0].Path != "b c.txt" {
		t.Errorf("status in a conflict: %+v", st)
	}
	h.ok(dir, must(Reset(api.GitResetRequest{Mode: "hard"})))
	if st = h.status(dir); !st.Clean {
		t.Errorf("after reset --hard: %+v", st)
	}

	// Config and remotes.
	v := "-x value"
	h.ok(dir, must(Config(api.GitConfigRequest{Key: "hutch.test", Value: &v})))
	if got := ParseValues("hutch.test", h.ok(dir, must(Config(api.GitConfigRequest{Key: "hutch.test"}))).Stdout); len(got) != 1 || got[0].Value != v {
		t.Errorf("config get: %+v", got)
	}
	if r := h.run(dir, Remotes()); r.ExitCode != 1 {
		t.Errorf("no remotes: exit %d (the manager answers none on 1)", r.ExitCode)
	}
	h.ok(dir, RemoteAdd("up", "https://example.com/r.git", false))
	if rs := ParseRemotes(h.ok(dir, Remotes()).Stdout); len(rs) != 1 || rs[0] != (api.GitRemote{Name: "up", URL: "https://example.com/r.git"}) {
		t.Errorf("remotes: %+v", rs)
	}
}

// TestHostGitInjectionInert hands git values that would be options, or
// commands, if they were read as such; none runs anything.
func TestHostGitInjectionInert(t *testing.T) {
	h := newHostGit(t)
	dir := filepath.Join(t.TempDir(), "repo")
	h.ok("/", must(Init(api.GitInitRequest{}, dir)))
	pwned := filepath.Join(t.TempDir(), "pwned")
	write(t, filepath.Join(dir, "f"), "f\n")
	h.ok(dir, must(Add(nil)))
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "--amend"})))
	// Paths go after -- and are literal: "--output=FILE" is a file name.
	for _, c := range []Cmd{
		must(Add([]string{"--exec=touch " + pwned})),
		must(Log(api.GitLogRequest{Paths: []string{"--output=" + pwned}})),
		must(Diff(api.GitDiffRequest{Paths: []string{"--output=" + pwned}}, 0)),
		must(Restore(api.GitRestoreRequest{Paths: []string{"--source=HEAD", "--output=" + pwned}})),
	} {
		h.run(dir, c)
	}
	// Refs, remotes and URLs that could be options are refused.
	for _, err := range []error{
		second(BranchChange(api.GitBranchRequest{Name: "--upload-pack=touch " + pwned})),
		second(Checkout(api.GitCheckoutRequest{Ref: "--output=" + pwned})),
		second(ParseRemoteArg("--upload-pack=touch " + pwned)),
		second(ParseRemoteURL("url", "ext::sh -c touch% "+pwned)),
	} {
		if !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("not refused: %v", err)
		}
	}
	// A remote helper URL that reached git anyway is not run either.
	h.run(dir, Cmd{Args: []string{"fetch", "--end-of-options", "ext::sh -c touch% " + pwned}})
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatalf("an injected command ran: %s exists", pwned)
	}
	if commits, _ := ParseLog(h.ok(dir, LastCommit()).Stdout, false); len(commits) != 1 || commits[0].Subject != "--amend" {
		t.Errorf("a message that looks like an option: %+v", commits)
	}
}

func TestHostGitCredentials(t *testing.T) {
	h := newHostGit(t)
	const user, pw = "ann", "pw-Zq8#x y"
	srv := testutil.ServeGit(t, user, pw)
	bare := srv.Bare(t, "r.git")
	dir := filepath.Join(t.TempDir(), "work")
	h.ok("/", must(Init(api.GitInitRequest{InitialBranch: "main"}, dir)))
	write(t, filepath.Join(dir, "f"), "f\n")
	h.ok(dir, must(Add(nil)))
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "one"})))
	h.ok(dir, RemoteAdd("origin", srv.URL+"r.git", false))

	push := func(auth api.GitAuth) Result {
		req := api.GitPushRequest{GitRemoteCall: api.GitRemoteCall{GitAuth: auth}, SetUpstream: true}
		rc, err := ParseRemoteCall(req.GitRemoteCall)
		if err != nil {
			t.Fatal(err)
		}
		var url string
		if rc.NeedsURL() {
			url = string(h.ok(dir, RemoteURL(rc.Name, true)).Stdout)
		}
		env, err := rc.Auth(url)
		if err != nil {
			t.Fatal(err)
		}
		c := must(Push(req, rc.Arg))
		c.Env = append(c.Env, env...)
		return h.run(dir, c)
	}
	if r := push(api.GitAuth{}); !errdefs.Is(Failure("push", r), errdefs.CodeGitAuth) {
		t.Errorf("push without credentials: %v", Failure("push", r))
	}
	if r := push(api.GitAuth{Username: user, Password: "wrong", CredentialsFor: srv.URL}); !errdefs.Is(Failure("push", r), errdefs.CodeGitAuth) {
		t.Errorf("push with a wrong password: %v", Failure("push", r))
	}
	r := push(api.GitAuth{Username: user, Password: pw, CredentialsFor: srv.URL})
	if r.ExitCode != 0 {
		t.Fatalf("push: %v", Failure("push", r))
	}
	if refs := ParsePush(r.Stdout); len(refs) != 1 || refs[0] != (api.GitPushRef{Local: "main", Remote: "main", Status: "new", Summary: "[new branch]"}) {
		t.Errorf("pushed refs: %+v", refs)
	}
	if got := srv.Git(t, bare, "log", "-1", "--format=%s", "main"); got != "one" {
		t.Errorf("the server's main is at %q", got)
	}

	// A clone with the password in its URL stores the URL without it.
	clone := filepath.Join(t.TempDir(), "clone")
	u, _ := url.Parse(srv.URL + "r.git")
	u.User = url.UserPassword(user, pw)
	req := api.GitCloneRequest{URL: u.String()}
	remote, err := ParseRemoteURL("url", req.URL)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := Creds(req.GitAuth, &remote)
	if err != nil || creds.Password != pw {
		t.Fatalf("credentials from the URL: %+v, %v", creds, err)
	}
	h.ok("/", must(Clone(req, remote, creds, clone)))
	if st := h.status(clone); st.Branch != "main" || st.Upstream != "origin/main" || !st.Clean {
		t.Errorf("the clone's status: %+v", st)
	}
	for _, d := range []string{clone, dir, h.home} {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pw)) || len(secretsIn([]string{string(b)}, user, pw)) > 0 {
					t.Errorf("the password is in %s", p)
				}
			}
			return nil
		})
	}
}

func must(c Cmd, err error) Cmd {
	if err != nil {
		panic(err)
	}
	return c
}

// TestHostGitCredentialsGoOnlyWhereNamed: credentials go to the URLs
// under the call's credentials_for, never to a remote the repository's
// config names elsewhere. The other server takes the same credentials,
// so a fetch from it succeeds only if they reached it.
func TestHostGitCredentialsGoOnlyWhereNamed(t *testing.T) {
	h := newHostGit(t)
	const user, pw = "ann", "pw-named-only"
	good, other := testutil.ServeGit(t, user, pw), testutil.ServeGit(t, user, pw)
	dir := filepath.Join(t.TempDir(), "work")
	h.ok("/", must(Init(api.GitInitRequest{InitialBranch: "main"}, dir)))
	write(t, filepath.Join(dir, "f"), "f\n")
	h.ok(dir, must(Add(nil)))
	h.ok(dir, must(Commit(api.GitCommitRequest{Message: "one"})))
	for _, srv := range []*testutil.GitServer{good, other} {
		srv.Git(t, dir, "push", "-q", srv.Bare(t, "r.git"), "main")
	}

	// fetch runs sandbox::git::fetch's commands as the manager does.
	fetch := func(rc api.GitRemoteCall) (Result, error) {
		call, err := ParseRemoteCall(rc)
		if err != nil {
			return Result{}, err
		}
		var urls string
		if call.NeedsURL() {
			urls = string(h.ok(dir, RemoteURL(call.Name, false)).Stdout)
		}
		env, err := call.Auth(urls)
		if err != nil {
			return Result{}, err
		}
		c := must(Fetch(api.GitFetchRequest{GitRemoteCall: rc}, call.Arg))
		c.Env = append(c.Env, env...)
		r := h.run(dir, c)
		if r.ExitCode != 0 {
			return r, Failure("fetch", r)
		}
		return r, nil
	}
	auth := api.GitAuth{Username: user, Password: pw, CredentialsFor: good.URL}

	// origin, set by the repository, names the other server: refused
	// before git runs, and nothing reaches it.
	h.ok(dir, RemoteAdd("origin", other.URL+"r.git", false))
	if _, err := fetch(api.GitRemoteCall{GitAuth: auth}); !errdefs.Is(err, errdefs.CodeGitAuth) || !strings.Contains(err.Error(), "credentials_for") {
		t.Errorf("fetch from an origin outside credentials_for: %v, want S271", err)
	}
	if n := other.Refused(); n != 0 {
		t.Errorf("the other server had %d requests", n)
	}
	// A remote given by name takes credentials only with credentials_for.
	if _, err := fetch(api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: pw}}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("credentials for origin without credentials_for: %v, want S001", err)
	}
	// A host alone means https.
	hostOnly := auth
	hostOnly.CredentialsFor = strings.TrimSuffix(strings.TrimPrefix(good.URL, "http://"), "/")
	if _, err := fetch(api.GitRemoteCall{Remote: good.URL + "r.git", GitAuth: hostOnly}); !errdefs.Is(err, errdefs.CodeGitAuth) {
		t.Errorf("an http remote with credentials_for a host (https): %v, want S271", err)
	}

	// The repository rewrites the named server's URLs to the other one
	// (insteadOf): git goes there without the credentials, which are
	// scoped to credentials_for in git's own config.
	h.ok(dir, Cmd{Args: []string{"config", "url." + other.URL + ".insteadOf", good.URL}})
	before := other.Refused()
	if _, err := fetch(api.GitRemoteCall{Remote: good.URL + "r.git", GitAuth: auth}); !errdefs.Is(err, errdefs.CodeGitAuth) {
		t.Errorf("fetch rewritten to the other server: %v, want S271 (it had the credentials)", err)
	}
	if other.Refused() == before {
		t.Error("the rewritten fetch did not reach the other server: the test proves nothing")
	}
	h.ok(dir, Cmd{Args: []string{"config", "--unset", "url." + other.URL + ".insteadOf"}})

	// Where the remote is under credentials_for, they go: as a URL, and
	// as origin once it names the server; a path prefix counts too.
	if _, err := fetch(api.GitRemoteCall{Remote: good.URL + "r.git", GitAuth: auth}); err != nil {
		t.Errorf("fetch from the named server: %v", err)
	}
	h.ok(dir, RemoteAdd("origin", good.URL+"r.git", true))
	prefix := auth
	prefix.CredentialsFor = good.URL + "r.git"
	for _, a := range []api.GitAuth{auth, prefix} {
		if _, err := fetch(api.GitRemoteCall{GitAuth: a}); err != nil {
			t.Errorf("fetch from origin with credentials_for %s: %v", a.CredentialsFor, err)
		}
	}
	if good.Refused() != 0 {
		t.Errorf("the named server refused %d requests", good.Refused())
	}
}
