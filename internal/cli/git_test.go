package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// gitServer answers the git routes with canned results and keeps each
// request's path and body.
type gitServer struct {
	mu     sync.Mutex
	paths  []string
	bodies []map[string]any
	answer map[string]any // by op
}

func newGitHarness(t *testing.T, answer map[string]any) (*harness, *gitServer) {
	g := &gitServer{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		op := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		g.mu.Lock()
		g.paths = append(g.paths, r.Method+" "+r.URL.Path)
		g.bodies = append(g.bodies, body)
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if a, ok := g.answer[op]; ok {
			if env, isErr := a.(api.ErrorEnvelope); isErr {
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(map[string]any{"error": env})
				return
			}
			json.NewEncoder(w).Encode(a)
			return
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	return &harness{t: t, env: map[string]string{"HUTCH_URL": srv.URL}, tty: map[string]bool{}}, g
}

func TestGitCommandsMakeTheirRequests(t *testing.T) {
	tests := []struct {
		args  []string
		stdin string
		env   map[string]string
		op    string
		body  map[string]any
	}{
		{[]string{"init", "/w/r", "-b", "main"}, "", nil, "init", map[string]any{"path": "/w/r", "initial_branch": "main"}},
		{[]string{"clone", "https://example.com/r.git", "/w/r", "--username", "ann", "--password-stdin", "--depth", "1"}, "s3cret\n", nil, "clone",
			map[string]any{"url": "https://example.com/r.git", "path": "/w/r", "username": "ann", "password": "s3cret", "depth": float64(1)}},
		{[]string{"-C", "/w/r", "status", "--user", "1000", "-e", "A=1", "--timeout", "5s"}, "", nil, "status",
			map[string]any{"path": "/w/r", "user": "1000", "env": []any{"A=1"}, "timeout_ms": float64(5000)}},
		{[]string{"add", "--", "-rf", "b c"}, "", nil, "add", map[string]any{"paths": []any{"-rf", "b c"}}},
		{[]string{"commit", "-m", "msg", "-a", "--author-name", "Ann"}, "", nil, "commit", map[string]any{"message": "msg", "all": true, "author_name": "Ann"}},
		{[]string{"diff", "HEAD~1", "--staged", "--", "a"}, "", nil, "diff", map[string]any{"ref": "HEAD~1", "staged": true, "paths": []any{"a"}}},
		{[]string{"log", "-n", "5"}, "", nil, "log", map[string]any{"max_count": float64(5)}},
		{[]string{"branch", "feature", "main"}, "", nil, "branch", map[string]any{"name": "feature", "start_point": "main"}},
		{[]string{"branch", "-D", "old"}, "", nil, "branch", map[string]any{"name": "old", "delete": true, "force": true}},
		{[]string{"checkout", "-b", "new", "origin/main"}, "", nil, "checkout", map[string]any{"ref": "new", "create": true, "start_point": "origin/main"}},
		{[]string{"reset", "--hard", "HEAD~2"}, "", nil, "reset", map[string]any{"ref": "HEAD~2", "mode": "hard"}},
		{[]string{"restore", "--staged", "a"}, "", nil, "restore", map[string]any{"paths": []any{"a"}, "staged": true}},
		{[]string{"remote", "add", "up", "/srv/r"}, "", nil, "remote", map[string]any{"name": "up", "url": "/srv/r"}},
		{[]string{"remote", "rm", "up"}, "", nil, "remote", map[string]any{"name": "up", "remove": true}},
		{[]string{"config", "user.name", "Ann", "--global"}, "", nil, "config", map[string]any{"key": "user.name", "value": "Ann", "scope": "global"}},
		{[]string{"fetch", "--prune", "--credentials-for", "github.com"}, "", map[string]string{"HUTCH_GIT_TOKEN": "tok"}, "fetch",
			map[string]any{"prune": true, "token": "tok", "credentials_for": "github.com"}},
		{[]string{"pull", "origin", "main", "--rebase", "--token-stdin", "--credentials-for", "https://github.com/acme/"}, "tok2", nil, "pull",
			map[string]any{"remote": "origin", "branch": "main", "rebase": true, "token": "tok2", "credentials_for": "https://github.com/acme/"}},
		{[]string{"push", "-u", "origin"}, "", nil, "push", map[string]any{"remote": "origin", "set_upstream": true}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			h, g := newGitHarness(t, nil)
			for k, v := range tt.env {
				h.env[k] = v
			}
			_, errOut, code := h.run(tt.stdin, append([]string{"git", id}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if len(g.paths) != 1 || g.paths[0] != "POST /v1/sandboxes/"+id+"/git/"+tt.op {
				t.Fatalf("requests %q, want one to git/%s", g.paths, tt.op)
			}
			want := map[string]any{"sandbox_id": id}
			for k, v := range tt.body {
				want[k] = v
			}
			if !reflect.DeepEqual(g.bodies[0], want) {
				t.Errorf("body %v, want %v", g.bodies[0], want)
			}
		})
	}
}

func TestGitCommandsPrint(t *testing.T) {
	h, _ := newGitHarness(t, map[string]any{
		"status": api.GitStatus{Branch: "main", Upstream: "origin/main", Ahead: 1, Files: []api.GitFileStatus{
			{Path: "new", RenamedFrom: "old", Index: api.GitRenamed, Worktree: api.GitUnmodified},
			{Path: "x\x1b[2J", Index: api.GitUntracked, Worktree: api.GitUntracked},
		}},
		"diff":   api.GitDiffResponse{Diff: "+line\n", Truncated: true},
		"commit": api.GitCommitResponse{Commit: api.GitCommit{Hash: oidFor("a"), Subject: "msg"}},
		"push":   api.ErrorEnvelope{Type: "execution", Code: "S275", Message: "git push failed", FixNote: "pull first"},
	})
	out, _, code := h.run("", "git", id, "status")
	if code != 0 || out != "## main [origin/main: ahead 1]\nR  old -> new\n?? x\\x1b[2J\n" {
		t.Errorf("status: %d %q", code, out)
	}
	out, errOut, code := h.run("", "git", id, "diff")
	if code != 0 || out != "+line\n" || !strings.Contains(errOut, "cut") {
		t.Errorf("diff: %d %q %q", code, out, errOut)
	}
	if out, _, _ = h.run("", "git", id, "commit", "-m", "msg"); out != "[aaaaaaa] msg\n" {
		t.Errorf("commit: %q", out)
	}
	if out, _, _ = h.run("", "git", id, "status", "--json"); !strings.Contains(out, `"upstream": "origin/main"`) {
		t.Errorf("status --json: %q", out)
	}
	if _, errOut, code = h.run("", "git", id, "push"); code != 1 || !strings.Contains(errOut, "S275") || !strings.Contains(errOut, "pull first") {
		t.Errorf("push refused: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"git"}, {"git", id}, {"git", id, "nope"}, {"git", id, "status", "--bogus"}, {"git", id, "diff", "a", "b"}} {
		if _, errOut, code := h.run("", args...); code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", args, code, errOut)
		}
	}
	if out, _, code := h.run("", "git", "--help"); code != 0 || !strings.Contains(out, "hutch git ID OP") {
		t.Errorf("git --help: %d %q", code, out)
	}
}

func oidFor(c string) string { return strings.Repeat(c, 40) }
