package envd

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
)

func TestInitAndEnvs(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	post := func(body string) int {
		res, err := c.Post(e.srv.URL+"/init", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(`{"envVars":{"GREETING":"hi","B":"2"},"timestamp":"2026-01-01T00:00:00Z"}`); got != http.StatusNoContent {
		t.Fatalf("init: %d", got)
	}
	for _, bad := range []string{`{"defaultUser":"root"}`, `{"accessToken":"x"}`, `{"envVars":{"A=B":"1"}}`, `not json`} {
		if got := post(bad); got != http.StatusBadRequest {
			t.Errorf("init %s: %d, want 400", bad, got)
		}
	}
	res, err := c.Get(e.srv.URL + "/envs")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var envs map[string]string
	if err := json.NewDecoder(res.Body).Decode(&envs); err != nil || envs["GREETING"] != "hi" || envs["B"] != "2" {
		t.Fatalf("envs %v (%v)", envs, err)
	}
	// A request without the sandbox header names nothing.
	res, err = http.Get(e.srv.URL + "/envs")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("no sandbox: %d %s", res.StatusCode, b)
	}
}

func TestEntryOwnership(t *testing.T) {
	e := newEnv(t)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	group, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As envd's, a target is the path the link resolves to in the end
	// (link → link2 → f), or the link's own path when it does not resolve.
	for name, target := range map[string]string{"link2": "f", "link": "link2", "dangling": "nope"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	fs := e.fs(nil)
	st, err := fs.Stat(testCtx(t), connect.NewRequest(&pb.StatRequest{Path: filepath.Join(dir, "link")}))
	if err != nil {
		t.Fatal(err)
	}
	if en := st.Msg.GetEntry(); en.GetOwner() != me.Username || en.GetGroup() != group.Name || en.GetSymlinkTarget() != real {
		t.Fatalf("stat: owner %q group %q target %q, want %q %q %q", en.GetOwner(), en.GetGroup(), en.GetSymlinkTarget(), me.Username, group.Name, real)
	}
	ls, err := fs.ListDir(testCtx(t), connect.NewRequest(&pb.ListDirRequest{Path: dir, Depth: 1}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"f": "", "link": real, "link2": real, "dangling": filepath.Join(dir, "dangling")}
	for _, en := range ls.Msg.GetEntries() {
		if en.GetOwner() != me.Username || en.GetGroup() != group.Name || en.GetSymlinkTarget() != want[en.GetName()] {
			t.Errorf("list: %s owner %q group %q target %q, want %q", en.GetName(), en.GetOwner(), en.GetGroup(), en.GetSymlinkTarget(), want[en.GetName()])
		}
	}
}

func TestParseOwnership(t *testing.T) {
	got := parseOwnership("/a\x00root\x00wheel\x00\x00/b\x00u\x00g\x00/a\x00/c\x00cut")
	if len(got) != 2 || got["/a"] != (ownership{"root", "wheel", ""}) || got["/b"] != (ownership{"u", "g", "/a"}) {
		t.Fatalf("parsed %v", got)
	}
	if got := parseOwnership(""); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
}
