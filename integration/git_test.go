package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// grepAll lists the files of a sandbox holding any of the -e strings that
// follow, outside /proc, /sys and /dev.
var grepAll = []string{"grep", "-rlF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev"}

// TestGitAgainstAServerOnTheHost runs sandbox::git::* in a real sandbox
// against git http-backend on the host's loopback (behind basic auth),
// reached through the sandbox's gateway: a clone with the password in its
// URL, the password nowhere in the sandbox, the daemon's log or the
// events afterwards, then status, diff, add, commit, log, branch and a
// push that lands in the host's bare repository; a wrong password is
// S271, and values that would be options are refused or inert.
func TestGitAgainstAServerOnTheHost(t *testing.T) {
	const user = "ann"
	pw := "pw-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000")
	srv := testutil.ServeGit(t, user, pw)
	bare := srv.Bare(t, "r.git")
	seed := filepath.Join(t.TempDir(), "seed")
	srv.Git(t, "/", "init", "-q", "--initial-branch=main", seed)
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("seeded on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Git(t, seed, "add", "README")
	srv.Git(t, seed, "commit", "-q", "-m", "seed")
	srv.Git(t, seed, "push", "-q", bare, "main")
	seedHash := srv.Git(t, bare, "rev-parse", "main")

	d := startDaemon(t, baseConfig(""))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The server's loopback URL, given at create, is forwarded through the
	// gateway and rewritten to it.
	id := d.create(api.CreateRequest{Image: "python", Network: true, Env: api.Env{"GIT_SERVER=" + srv.URL}})
	base := strings.TrimSpace(d.exec(id, "sh", "-c", "echo $GIT_SERVER").Stdout)
	if !strings.HasPrefix(base, "http://") || strings.Contains(base, "127.0.0.1") {
		t.Fatalf("GIT_SERVER in the sandbox is %q, want the gateway's address", base)
	}
	remote := base + "r.git"
	at := func(path string) api.GitTarget { return api.GitTarget{SandboxID: id, Path: path} }
	const repo = "/root/r"

	_, err := d.c.GitClone(ctx, api.GitCloneRequest{GitTarget: at("/root/denied"), URL: remote, GitAuth: api.GitAuth{Username: user, Password: "wrong"}})
	wantCode(t, err, "S271")
	_, err = d.c.GitClone(ctx, api.GitCloneRequest{GitTarget: at("/root/anonymous"), URL: remote})
	wantCode(t, err, "S271")

	u, err := url.Parse(remote)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pw)
	cl, err := d.c.GitClone(ctx, api.GitCloneRequest{GitTarget: at(repo), URL: u.String()})
	if err != nil {
		t.Fatalf("clone: %v\n%s", err, d.log)
	}
	if cl.Path != repo || cl.URL != remote || cl.Branch != "main" || cl.Commit != seedHash {
		t.Errorf("clone = %+v, want %s on main at %s", cl, remote, seedHash)
	}
	if cfg := d.exec(id, "cat", repo+"/.git/config").Stdout; !strings.Contains(cfg, "url = "+remote+"\n") {
		t.Errorf("origin is not stored as %s:\n%s", remote, cfg)
	}
	noSecretAnywhere := func(when string) {
		t.Helper()
		header := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		r := d.execReq(api.ExecRequest{SandboxID: id, TimeoutMs: setupTimeoutMs, Argv: slices.Concat(grepAll, []string{"-e", pw, "-e", header, "/"})})
		if r.ExitCode == nil || *r.ExitCode != 1 {
			t.Errorf("%s: grep for the password in the sandbox: exit %v, files %q, stderr %q", when, r.ExitCode, r.Stdout, r.Stderr)
		}
		if strings.Contains(d.log.String(), pw) || strings.Contains(d.log.String(), header) {
			t.Errorf("%s: the password is in the daemon's log", when)
		}
		list, err := d.c.ListEvents(ctx, api.EventsRequest{SandboxID: id})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(list); strings.Contains(string(b), pw) || strings.Contains(string(b), header) {
			t.Errorf("%s: the password is in the events", when)
		}
	}
	noSecretAnywhere("after the clone")
	gitExecs := 0
	for _, e := range d.eventsOf(id, api.EventExecStarted) {
		if e["command"] == "git" {
			gitExecs++
		}
	}
	if gitExecs == 0 {
		t.Error("no exec.started event of git")
	}

	// Work in the clone: change, diff, stage, commit, branch.
	d.setup(id, "sh", "-c", "echo 'changed in the sandbox' >> "+repo+"/README && echo new > "+repo+"/added.txt")
	st, err := d.c.GitStatus(ctx, api.GitStatusRequest{GitTarget: at(repo)})
	if err != nil || st.Branch != "main" || st.Upstream != "origin/main" || st.Clean || len(st.Files) != 2 ||
		st.Files[0].Path != "README" || st.Files[0].Worktree != api.GitModified || !st.Files[1].Untracked {
		t.Fatalf("status: %+v, %v", st, err)
	}
	diff, err := d.c.GitDiff(ctx, api.GitDiffRequest{GitTarget: at(repo), NameStatus: true})
	if err != nil || !strings.Contains(diff.Diff, "+changed in the sandbox") || diff.Truncated || len(diff.Files) != 1 || diff.Files[0].Status != "M" {
		t.Errorf("diff: %+v, %v", diff, err)
	}
	if st, err = d.c.GitAdd(ctx, api.GitAddRequest{GitTarget: at(repo)}); err != nil || len(st.Files) != 2 || !st.Files[0].Staged || !st.Files[1].Staged {
		t.Fatalf("add: %+v, %v", st, err)
	}
	c, err := d.c.GitCommit(ctx, api.GitCommitRequest{GitTarget: at(repo), Message: "from the sandbox",
		GitIdentity: api.GitIdentity{AuthorName: "Sandbox", AuthorEmail: "sandbox@example.com"}})
	if err != nil || c.Commit.Subject != "from the sandbox" || len(c.Commit.Parents) != 1 || c.Commit.Parents[0] != seedHash {
		t.Fatalf("commit: %+v, %v", c, err)
	}
	_, err = d.c.GitCommit(ctx, api.GitCommitRequest{GitTarget: at(repo), Message: "again", GitIdentity: api.GitIdentity{AuthorName: "S", AuthorEmail: "s@example.com"}})
	wantCode(t, err, "S274")
	log, err := d.c.GitLog(ctx, api.GitLogRequest{GitTarget: at(repo)})
	if err != nil || len(log.Commits) != 2 || log.Commits[0].Hash != c.Commit.Hash || log.Commits[0].Author != "Sandbox" ||
		log.Commits[0].Email != "sandbox@example.com" || log.Commits[1].Hash != seedHash {
		t.Errorf("log: %+v, %v", log, err)
	}
	br, err := d.c.GitBranch(ctx, api.GitBranchRequest{GitTarget: at(repo), Name: "feature"})
	if err != nil || br.Current != "main" || len(br.Branches) != 2 || br.Branches[1].Name != "main" || br.Branches[1].Ahead != 1 {
		t.Errorf("branch: %+v, %v", br, err)
	}

	// Push: refused with a wrong password, then through to the host.
	_, err = d.c.GitPush(ctx, api.GitPushRequest{GitTarget: at(repo), GitRemoteCall: api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: "wrong", CredentialsFor: base}}})
	wantCode(t, err, "S271")
	p, err := d.c.GitPush(ctx, api.GitPushRequest{GitTarget: at(repo), GitRemoteCall: api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: api.Secret(pw), CredentialsFor: base}}})
	if err != nil || len(p.Refs) != 1 || p.Refs[0].Status != "updated" || p.Refs[0].Remote != "main" {
		t.Fatalf("push: %+v, %v", p, err)
	}
	if got := srv.Git(t, bare, "rev-parse", "main"); got != c.Commit.Hash {
		t.Errorf("the host's bare repository has main at %s, want the sandbox's commit %s", got, c.Commit.Hash)
	}
	if st, err = d.c.GitStatus(ctx, api.GitStatusRequest{GitTarget: at(repo)}); err != nil || !st.Clean || st.Ahead != 0 {
		t.Errorf("status after the push: %+v, %v", st, err)
	}
	// The CLI, with the password on its stdin.
	out, errOut, code := d.cli(pw+"\n", "git", id, "-C", repo, "pull", "--username", user, "--password-stdin", "--credentials-for", base)
	if code != 0 || !strings.HasPrefix(out, "## main [origin/main]") {
		t.Errorf("hutch git pull: exit %d, %q %q", code, out, errOut)
	}
	noSecretAnywhere("after the push and pull")

	// Injection attempts: a branch name, a path and a ref that would be
	// options, and a remote helper URL, are refused or inert.
	pwned := "/tmp/pwned"
	_, err = d.c.GitClone(ctx, api.GitCloneRequest{GitTarget: at("/root/x"), URL: remote, Branch: "--upload-pack=touch " + pwned})
	wantCode(t, err, "S001")
	_, err = d.c.GitClone(ctx, api.GitCloneRequest{GitTarget: at("/root/x"), URL: "ext::sh -c touch% " + pwned})
	wantCode(t, err, "S001")
	_, err = d.c.GitCheckout(ctx, api.GitCheckoutRequest{GitTarget: at(repo), Ref: "--orphan=" + pwned})
	wantCode(t, err, "S001")
	_, err = d.c.GitAdd(ctx, api.GitAddRequest{GitTarget: at(repo), Paths: []string{"--exec=touch " + pwned}})
	wantCode(t, err, "S275")
	_, err = d.c.GitLog(ctx, api.GitLogRequest{GitTarget: at(repo), Paths: []string{"--output=" + pwned}})
	if err != nil {
		t.Errorf("log of a path that looks like an option: %v", err)
	}
	if r := d.exec(id, "sh", "-c", "ls -a /tmp /root "+repo); strings.Contains(r.Stdout, "pwned") || strings.Contains(r.Stdout, "\nx\n") {
		t.Errorf("an injection attempt left a trace: %q", r.Stdout)
	}
	if br, err := d.c.GitBranch(ctx, api.GitBranchRequest{GitTarget: at(repo)}); err != nil || len(br.Branches) != 2 {
		t.Errorf("branches after the attempts: %+v, %v", br, err)
	}

	// As another user: git runs as nobody, with nobody's home.
	nobody := api.GitTarget{SandboxID: id, Path: "/tmp/nobody", User: "nobody"}
	if _, err := d.c.GitInit(ctx, api.GitInitRequest{GitTarget: nobody}); err != nil {
		t.Fatalf("init as nobody: %v", err)
	}
	if st, err := d.c.GitStatus(ctx, api.GitStatusRequest{GitTarget: nobody}); err != nil || !st.Clean {
		t.Errorf("status as nobody: %+v, %v", st, err)
	}
	if owner := strings.TrimSpace(d.exec(id, "stat", "-c", "%U", "/tmp/nobody/.git").Stdout); owner != "nobody" {
		t.Errorf("init as nobody made a repository owned by %q", owner)
	}

	// The search for the password is not blind: a file holding it is found.
	d.setup(id, "sh", "-c", "echo \"$0\" > /var/control", pw)
	r := d.execReq(api.ExecRequest{SandboxID: id, TimeoutMs: setupTimeoutMs, Argv: slices.Concat(grepAll, []string{"-e", pw, "/"})})
	if strings.TrimSpace(r.Stdout) != "/var/control" {
		t.Errorf("grep found %q, want /var/control", r.Stdout)
	}
}

// TestGitCredentialsGoOnlyWhereNamed (issue 33, item 6): a token given
// for the caller's server reaches it, and never a listener that the
// sandbox itself set as origin. Both servers take the same credentials,
// so a fetch from the other one succeeds only if they reached it.
func TestGitCredentialsGoOnlyWhereNamed(t *testing.T) {
	const user = "ann"
	pw := "pw-" + time.Now().Format("150405.000000")
	named, other := testutil.ServeGit(t, user, pw), testutil.ServeGit(t, user, pw)
	seed := filepath.Join(t.TempDir(), "seed")
	named.Git(t, "/", "init", "-q", "--initial-branch=main", seed)
	named.Git(t, seed, "commit", "-q", "--allow-empty", "-m", "seed")
	for _, srv := range []*testutil.GitServer{named, other} {
		srv.Git(t, seed, "push", "-q", srv.Bare(t, "r.git"), "main")
	}

	d := startDaemon(t, baseConfig(""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	id := d.create(api.CreateRequest{Image: "python", Network: true, Env: api.Env{"NAMED=" + named.URL, "OTHER=" + other.URL}})
	urls := strings.Fields(d.exec(id, "sh", "-c", "echo $NAMED $OTHER").Stdout)
	if len(urls) != 2 || strings.Contains(urls[0], "127.0.0.1") || strings.Contains(urls[1], "127.0.0.1") {
		t.Fatalf("the servers' URLs in the sandbox: %q", urls)
	}
	namedURL, otherURL := urls[0], urls[1]
	const repo = "/root/r"
	at := api.GitTarget{SandboxID: id, Path: repo}
	if _, err := d.c.GitInit(ctx, api.GitInitRequest{GitTarget: at}); err != nil {
		t.Fatal(err)
	}
	// The sandbox, not the caller, makes origin the other listener.
	d.setup(id, "git", "-C", repo, "remote", "add", "origin", otherURL+"r.git")
	auth := api.GitAuth{Username: user, Password: api.Secret(pw), CredentialsFor: namedURL}
	_, err := d.c.GitFetch(ctx, api.GitFetchRequest{GitTarget: at, GitRemoteCall: api.GitRemoteCall{GitAuth: auth}})
	wantCode(t, err, "S271")
	if err != nil && !strings.Contains(err.Error(), "credentials_for") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	_, err = d.c.GitPush(ctx, api.GitPushRequest{GitTarget: at, GitRemoteCall: api.GitRemoteCall{GitAuth: auth, Branch: "main"}})
	wantCode(t, err, "S271")
	// Without credentials_for, a remote given by name takes none.
	_, err = d.c.GitPull(ctx, api.GitPullRequest{GitTarget: at, GitRemoteCall: api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: api.Secret(pw)}}})
	wantCode(t, err, "S001")
	// The CLI and the function endpoint carry credentials_for too.
	if _, errOut, code := d.cli(pw+"\n", "git", id, "-C", repo, "fetch", "--username", user, "--password-stdin", "--credentials-for", namedURL); code == 0 || !strings.Contains(errOut, "S271") {
		t.Errorf("hutch git fetch from the sandbox's origin: exit %d, %q", code, errOut)
	}
	body, _ := json.Marshal(map[string]any{"sandbox_id": id, "path": repo, "username": user, "password": pw, "credentials_for": namedURL})
	if status, resp := d.raw("POST", "/v1/functions/"+api.FnGitFetch, "", string(body)); status != 403 || !strings.Contains(resp, "S271") {
		t.Errorf("sandbox::git::fetch from the sandbox's origin: %d %s", status, resp)
	}
	if n := other.Refused(); n != 0 {
		t.Errorf("the sandbox's origin was asked %d times", n)
	}

	// The named server gets them: given as a URL, and as origin once it
	// names the server.
	if _, err := d.c.GitFetch(ctx, api.GitFetchRequest{GitTarget: at, GitRemoteCall: api.GitRemoteCall{Remote: namedURL + "r.git", Branch: "main", GitAuth: auth}}); err != nil {
		t.Fatalf("fetch from the named server: %v", err)
	}
	d.setup(id, "git", "-C", repo, "remote", "set-url", "origin", namedURL+"r.git")
	if st, err := d.c.GitPull(ctx, api.GitPullRequest{GitTarget: at, GitRemoteCall: api.GitRemoteCall{Branch: "main", GitAuth: auth}}); err != nil || st.Commit == "" {
		t.Fatalf("pull from the named server as origin: %+v, %v", st, err)
	}
	if named.Refused() != 0 || other.Refused() != 0 {
		t.Errorf("refused: %d by the named server, %d by the other", named.Refused(), other.Refused())
	}
}
