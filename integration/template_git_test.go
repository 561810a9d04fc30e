package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestTemplateBuildAddGit: ADD of a git repository (issue 39) served by
// git http-backend from a network namespace, under the build's egress
// policy: a branch, a tag, a subdir and --keep-git-dir put the commit's
// files; an unchanged rebuild is cached at every step; a new commit on
// the branch rebuilds its step with the new files; an unknown ref, a
// deny_out host and a closed port are refused with the line.
func TestTemplateBuildAddGit(t *testing.T) {
	gitBin := testutil.RequiresBinary(t, "git")
	addr, inside := privateNetns(t, 11)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a1\n")
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-qm", "one")
	git("tag", "v1")
	write("sub/b.txt", "b2\n")
	git("add", ".")
	git("commit", "-qm", "two")
	var ln net.Listener
	if err := inside(func() (err error) { ln, err = net.Listen("tcp4", addr+":80"); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	resolver := testResolver(t, map[string]string{"git.test": addr, "denied.test": addr})
	d := startDaemon(t, baseConfig(fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", resolver)))
	ctx := context.Background()
	policy := &api.EgressPolicy{AllowOut: []string{"*.test"}, DenyOut: []string{"denied.test"}}
	build := func(dockerfile string) (api.TemplateBuildResponse, map[int]bool, error) {
		cached := map[int]bool{}
		resp, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "addgit", Dockerfile: dockerfile, Egress: policy}, func(ev api.TemplateBuildEvent) error {
			if ev.Phase == "step" {
				cached[ev.Line] = ev.Cached
			}
			return nil
		})
		return resp, cached, err
	}
	const dockerfile = "FROM python\n" +
		"ADD http://git.test/repo/.git#main /src\n" +
		"ADD http://git.test/repo/.git#v1 /tagged\n" +
		"ADD http://git.test/repo/.git#main:sub /sub\n" +
		"ADD --keep-git-dir http://git.test/repo/.git /kept\n"
	const show = "cat /src/a.txt /src/sub/b.txt /tagged/a.txt /sub/b.txt; ls -A /tagged /sub; test -f /kept/.git/HEAD && echo kept; test -e /src/.git || echo no-git"
	check := func(want string) {
		t.Helper()
		id := d.create(api.CreateRequest{Template: "addgit"})
		if r := d.exec(id, "sh", "-c", show); r.Stdout != want {
			t.Errorf("the added repository: %q %q, want %q", r.Stdout, r.Stderr, want)
		}
		if _, err := d.c.Stop(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	resp, _, err := build(dockerfile)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	check("a1\nb2\na1\nb2\n/sub:\nb.txt\n\n/tagged:\na.txt\nkept\nno-git\n")
	if again, _, err := build(dockerfile); err != nil || again.CachedSteps != again.Steps || again.Steps != resp.Steps {
		t.Errorf("an unchanged rebuild: %+v %v", again, err)
	}
	write("a.txt", "a3\n")
	git("commit", "-qam", "three")
	if _, cached, err := build(dockerfile); err != nil || cached[2] {
		t.Errorf("a rebuild after a new commit on main: %v (line 2 cached: %v)", err, cached[2])
	}
	check("a3\nb2\na1\nb2\n/sub:\nb.txt\n\n/tagged:\na.txt\nkept\nno-git\n")

	for _, tc := range []struct{ dockerfile, want string }{
		{"FROM python\nADD http://git.test/repo/.git#nope /x\n", `has no branch, tag or commit "nope"`},
		{"FROM python\nADD http://denied.test/repo/.git /x\n", "hutch egress policy refused denied.test port 80 (deny_out denied.test)"},
		{"FROM python\nADD http://git.test:81/repo/.git /x\n", ":81: connect: connection refused"},
	} {
		if _, _, err := build(tc.dockerfile); !isS001(err) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want S001 with %q", tc.dockerfile, err, tc.want)
		}
	}
	if _, err := d.c.DeleteTemplate(ctx, "addgit"); err != nil {
		t.Fatal(err)
	}
}
