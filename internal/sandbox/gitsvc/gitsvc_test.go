package gitsvc

// sandbox::git::* over the fake core (sandboxtest) whose sandbox has a
// real in-process agent: it runs the host's git (skipped without one), so
// these tests need neither root nor gVisor.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestGitService(t *testing.T) {
	testutil.RequiresBinary(t, "git")
	const user, pw = "ann", "pw-3vK9!q"
	srv := testutil.ServeGit(t, user, pw)
	bare := srv.Bare(t, "r.git")
	var sbs sandboxtest.Sandboxes
	sb := sbs.Add("ann", "PATH="+os.Getenv("PATH"))
	sb.Agent = agenttest.Start(t, agent.Options{Version: "test"}, agentclient.Options{MaxOutputBytes: 1 << 20, CallTimeout: 10 * time.Second}).Client
	sb.Workdir = "/root"
	sb.FixNote = "use an image with git (python, node), or install it"
	m := New(&sbs, 1<<20, slog.New(slog.DiscardHandler))
	id := sb.ID
	ctx := auth.WithOwner(context.Background(), "ann")
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "repo")
	// The agent runs on the host: git gets a home of its own and no
	// system config.
	target := func(path string) api.GitTarget {
		return api.GitTarget{SandboxID: id, Path: path, Env: api.Env{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}}
	}
	who := api.GitIdentity{AuthorName: "Ann", AuthorEmail: "ann@example.com"}

	if _, err := m.GitStatus(ctx, api.GitStatusRequest{GitTarget: target(t.TempDir())}); !errdefs.Is(err, errdefs.CodeGitNotRepo) {
		t.Errorf("status outside a repository: %v, want S270", err)
	}
	if _, err := m.GitStatus(ctx, api.GitStatusRequest{GitTarget: target("/nonexistent/dir")}); !errdefs.Is(err, errdefs.CodeGitNotRepo) {
		t.Errorf("status of a missing directory: %v, want S270", err)
	}
	if _, err := m.GitInit(ctx, api.GitInitRequest{GitTarget: target(repo), InitialBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := m.GitAdd(ctx, api.GitAddRequest{GitTarget: target(repo)})
	if err != nil || len(st.Files) != 1 || st.Files[0].Status != api.GitAdded || !st.Files[0].Staged {
		t.Fatalf("add: %+v, %v", st, err)
	}
	c, err := m.GitCommit(ctx, api.GitCommitRequest{GitTarget: target(repo), Message: "first", GitIdentity: who})
	if err != nil || c.Commit.Subject != "first" || c.Commit.Author != "Ann" || len(c.Commit.Hash) != 40 {
		t.Fatalf("commit: %+v, %v", c, err)
	}
	if _, err := m.GitCommit(ctx, api.GitCommitRequest{GitTarget: target(repo), Message: "again", GitIdentity: who}); !errdefs.Is(err, errdefs.CodeGitNothing) {
		t.Errorf("commit of nothing: %v, want S274", err)
	}

	// Push with credentials that are in no argument, event or file.
	if _, err := m.GitRemote(ctx, api.GitRemoteRequest{GitTarget: target(repo), Name: "origin", URL: srv.URL + "r.git"}); err != nil {
		t.Fatal(err)
	}
	_, err = m.GitPush(ctx, api.GitPushRequest{GitTarget: target(repo), GitRemoteCall: api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: "wrong", CredentialsFor: srv.URL}}})
	if !errdefs.Is(err, errdefs.CodeGitAuth) {
		t.Errorf("push with a wrong password: %v, want S271", err)
	}
	p, err := m.GitPush(ctx, api.GitPushRequest{GitTarget: target(repo), SetUpstream: true,
		GitRemoteCall: api.GitRemoteCall{GitAuth: api.GitAuth{Username: user, Password: pw, CredentialsFor: srv.URL}}})
	if err != nil || p.Remote != "origin" || len(p.Refs) != 1 || p.Refs[0].Status != "new" || p.Refs[0].Local != "main" {
		t.Fatalf("push: %+v, %v", p, err)
	}
	if got := srv.Git(t, bare, "log", "-1", "--format=%H", "main"); got != c.Commit.Hash {
		t.Errorf("the server's main is %s, want %s", got, c.Commit.Hash)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	cl, err := m.GitClone(ctx, api.GitCloneRequest{GitTarget: target(clone), URL: srv.URL + "r.git", GitAuth: api.GitAuth{Username: user, Password: pw}})
	if err != nil || cl.Branch != "main" || cl.Commit != c.Commit.Hash || cl.URL != srv.URL+"r.git" {
		t.Fatalf("clone: %+v, %v", cl, err)
	}
	log, err := m.GitLog(ctx, api.GitLogRequest{GitTarget: target(clone)})
	if err != nil || len(log.Commits) != 1 || log.Commits[0].Hash != c.Commit.Hash {
		t.Errorf("log of the clone: %+v, %v", log, err)
	}
	b, _ := json.Marshal(sb.Events)
	if strings.Contains(string(b), pw) || !strings.Contains(string(b), `"git":"push"`) {
		t.Errorf("events: the password in them, or no exec of git's push:\n%s", b)
	}
	for _, dir := range []string{repo, clone, home} {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if b, rerr := os.ReadFile(p); err == nil && fi.Mode().IsRegular() && rerr == nil && strings.Contains(string(b), pw) {
				t.Errorf("the password is in %s", p)
			}
			return nil
		})
	}

	// Branches, diff, checkout, reset.
	br, err := m.GitBranch(ctx, api.GitBranchRequest{GitTarget: target(repo), Name: "feature"})
	if err != nil || br.Current != "main" || len(br.Branches) != 2 || br.Branches[0].Name != "feature" || br.Branches[1].Upstream != "origin/main" {
		t.Fatalf("branch: %+v, %v", br, err)
	}
	st, err = m.GitCheckout(ctx, api.GitCheckoutRequest{GitTarget: target(repo), Ref: "feature"})
	if err != nil || st.Branch != "feature" {
		t.Fatalf("checkout: %+v, %v", st, err)
	}
	os.WriteFile(filepath.Join(repo, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	d, err := m.GitDiff(ctx, api.GitDiffRequest{GitTarget: target(repo), NameStatus: true})
	if err != nil || !strings.Contains(d.Diff, "+world") || d.Truncated || len(d.Files) != 1 || d.Files[0] != (api.GitDiffFile{Status: "M", Path: "hello.txt"}) {
		t.Errorf("diff: %+v, %v", d, err)
	}
	if d, err = m.GitDiff(ctx, api.GitDiffRequest{GitTarget: target(repo), MaxBytes: 20}); err != nil || !d.Truncated || len(d.Diff) > 20 {
		t.Errorf("a diff cut at 20 bytes: %+v, %v", d, err)
	}
	if st, err = m.GitReset(ctx, api.GitResetRequest{GitTarget: target(repo), Mode: "hard"}); err != nil || !st.Clean {
		t.Errorf("reset --hard: %+v, %v", st, err)
	}
	v := "hutch"
	if cfg, err := m.GitConfig(ctx, api.GitConfigRequest{GitTarget: target(repo), Key: "user.name", Value: &v}); err != nil || len(cfg.Entries) != 1 {
		t.Errorf("config set: %+v, %v", cfg, err)
	}
	if cfg, err := m.GitConfig(ctx, api.GitConfigRequest{GitTarget: target(repo), Key: "user.email"}); err != nil || len(cfg.Entries) != 0 {
		t.Errorf("config get of an unset key: %+v, %v", cfg, err)
	}

	// An injection attempt in a branch name or a path is refused or inert.
	pwned := filepath.Join(t.TempDir(), "pwned")
	if _, err := m.GitCheckout(ctx, api.GitCheckoutRequest{GitTarget: target(repo), Ref: "--output=" + pwned}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("checkout of an option: %v, want S001", err)
	}
	if _, err := m.GitAdd(ctx, api.GitAddRequest{GitTarget: target(repo), Paths: []string{"--exec=touch " + pwned}}); !errdefs.Is(err, errdefs.CodeGitFailed) {
		t.Errorf("add of a path like an option: %v, want S275 (no such path)", err)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Errorf("an injection ran: %v", err)
	}
	// Without git (a PATH where it is not): S242.
	noGit := target(repo)
	noGit.Env = append(noGit.Env, "PATH=/nonexistent")
	if _, err := m.GitStatus(ctx, api.GitStatusRequest{GitTarget: noGit}); !errdefs.Is(err, errdefs.CodeNoInterpreter) {
		t.Errorf("status without git: %v, want S242", err)
	} else if fix := errdefs.As(err).FixNote; fix != "use an image with git (python, node), or install it" {
		// The images that have git, as the image store finds them.
		t.Errorf("status without git: fix %q, want the images that have git", fix)
	}
	if _, err := m.GitClone(ctx, api.GitCloneRequest{GitTarget: target(t.TempDir() + "/c"), URL: "/nonexistent/repo"}); !errdefs.Is(err, errdefs.CodeGitNoRemote) {
		t.Errorf("clone of a missing local path: %v, want S272", err)
	}
	if n := sbs.Held(); n != 0 {
		t.Errorf("%d exec slots not released", n)
	}
}
