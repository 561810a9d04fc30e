package templatebuild

import (
	"context"
	"errors"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// gitServer serves a repository with two commits on main (a.txt, then
// sub/b.txt) and the tag v1 on the first, over git's smart HTTP
// protocol; it returns the repository's URL and the commits.
func gitServer(t *testing.T) (remote string, first, second string) {
	t.Helper()
	testutil.RequiresBinary(t, gitBinary)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBinary, append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a1\n"), 0o644)
	git("add", ".")
	git("commit", "-qm", "one")
	git("tag", "-a", "v1", "-m", "v1")
	first = git("rev-parse", "HEAD")
	os.WriteFile(filepath.Join(repo, "sub", "b.txt"), []byte("b2\n"), 0o755)
	git("add", ".")
	git("commit", "-qm", "two")
	second = git("rev-parse", "HEAD")
	srv := httptest.NewServer(&cgi.Handler{Path: gitBinary, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(srv.Close)
	return srv.URL + "/repo/.git", first, second
}

// TestGitResolveAndCheckout: a branch, an annotated tag and a commit
// resolve to their commits; a checkout has the commit's files, .git only
// when kept, a subdir; an unknown ref, a checksum of another commit and
// a refused dial are errors that say so.
func TestGitResolveAndCheckout(t *testing.T) {
	remote, first, second := gitServer(t)
	var d net.Dialer
	f := Fetcher{Dir: t.TempDir(), Dial: d.DialContext}
	ctx := context.Background()
	resolve := func(src, checksum string) (*GitRepo, error) {
		ref, ok, err := ParseGit(src)
		if !ok || err != nil {
			t.Fatalf("ParseGit(%q) = %v, %v", src, ok, err)
		}
		return f.ResolveGit(ctx, ref, checksum)
	}
	for src, want := range map[string]string{remote: second, remote + "#main": second, remote + "#v1": first, remote + "#" + first: first, remote + "?tag=v1": first} {
		r, err := resolve(src, "")
		if err != nil || r.Commit != want {
			t.Errorf("%s: %v %v, want %s", src, r, err, want)
			continue
		}
		r.Close()
	}
	r, err := resolve(remote+"#main:sub", second[:8])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir, _, err := r.Checkout(false)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := GitSubdir(dir, r.Ref.SubDir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "b.txt")); string(b) != "b2\n" || err != nil {
		t.Errorf("sub/b.txt: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".git without --keep-git-dir: %v", err)
	}
	if _, err := GitSubdir(dir, "../.."); err != nil {
		t.Errorf("../.. is the checkout's root: %v", err)
	}
	if _, err := GitSubdir(dir, "nope"); err == nil {
		t.Error("a missing subdir is no error")
	}
	kept, _, err := r.Checkout(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kept, ".git", "HEAD")); err != nil {
		t.Errorf(".git with --keep-git-dir: %v", err)
	}

	if _, err := resolve(remote+"#nope", ""); err == nil || !strings.Contains(err.Error(), `no branch, tag or commit "nope"`) {
		t.Errorf("an unknown ref: %v", err)
	}
	if _, err := resolve(remote+"#v1", second[:8]); err == nil || !strings.Contains(err.Error(), "is commit "+first) {
		t.Errorf("another commit's checksum: %v", err)
	}
	if _, err := resolve("git@github.com:o/r.git", ""); err == nil || !strings.Contains(err.Error(), "over http or https") {
		t.Errorf("ssh: %v", err)
	}
	f.Dial = func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("refused by the policy")
	}
	if _, err := resolve(remote, ""); err == nil || err.Error() != "listing the refs of "+remote+": refused by the policy" {
		t.Errorf("a refused dial: %v", err)
	}
}

// TestParseGitSources: the git sources ADD takes parse (buildkit's
// forms), "github.com/o/r" is a local path, and a password in a URL
// never reaches a message.
func TestParseGitSources(t *testing.T) {
	for src, want := range map[string][2]string{
		"https://h.test/o/r.git#main:sub":             {"https://h.test/o/r.git", "main"},
		"https://h.test/o/r.git?tag=v1&subdir=sub":    {"https://h.test/o/r.git", "refs/tags/v1"},
		"git@h.test:o/r.git#v2":                       {"git@h.test:o/r.git", "v2"},
		"git://h.test/o/r#" + strings.Repeat("a", 40): {"git://h.test/o/r", strings.Repeat("a", 40)},
	} {
		ref, ok, err := ParseGit(src)
		if !ok || err != nil || ref.Remote != want[0] || ref.Ref != want[1] {
			t.Errorf("ParseGit(%q) = %+v %v %v, want %v", src, ref, ok, err, want)
		}
	}
	for _, src := range []string{"github.com/o/r", "./r.git", "https://h.test/file.txt", "r.git"} {
		if _, ok, _ := ParseGit(src); ok {
			t.Errorf("%q is a git source", src)
		}
	}
	if _, err := Parse([]byte("FROM python\nADD --keep-git-dir --checksum=abcd1234 https://h.test/o/r.git#main:sub /x\n")); err != nil {
		t.Errorf("ADD of a git source: %v", err)
	}
	if got := redactURL("fatal: unable to access 'https://u:secret@h.test/r.git/'"); strings.Contains(got, "secret") {
		t.Errorf("redactURL: %q", got)
	}
}
