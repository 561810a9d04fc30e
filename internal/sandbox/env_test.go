package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestRuntimeEnv(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python", Env: api.Env{"FROM_CREATE=1"}})
	printenv := func(key string) string {
		t.Helper()
		r, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "printf %s \"$" + key + "\""}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Stdout
	}
	if _, err := m.SetEnv(ctx, api.EnvSetRequest{SandboxID: id, Env: api.Env{"GREETING=hello world", "FROM_CREATE=2"}}); err != nil {
		t.Fatal(err)
	}
	if got := printenv("GREETING"); got != "hello world" {
		t.Errorf("an exec after env::set sees GREETING=%q", got)
	}
	// The exec's own env still wins.
	r, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "printf %s \"$GREETING\""}, Env: api.Env{"GREETING=mine"}})
	if err != nil || r.Stdout != "mine" {
		t.Errorf("exec env over the sandbox's: %q, %v", r.Stdout, err)
	}
	v, err := m.GetEnv(ctx, api.EnvGetRequest{SandboxID: id, Key: "FROM_CREATE"})
	if err != nil || !v.Set || v.Value != "2" {
		t.Errorf("env::get: %+v, %v", v, err)
	}
	list, err := m.ListEnv(ctx, api.EnvListRequest{SandboxID: id})
	if err != nil || list.Env["GREETING"] != "hello world" || list.Effective["PATH"] == "" || list.Env["PATH"] != "" {
		t.Errorf("env::list: %+v, %v", list, err)
	}
	if _, err := m.DeleteEnv(ctx, api.EnvDeleteRequest{SandboxID: id, Keys: []string{"GREETING"}}); err != nil {
		t.Fatal(err)
	}
	if got := printenv("GREETING"); got != "" {
		t.Errorf("after env::delete GREETING=%q", got)
	}
	if v, _ := m.GetEnv(ctx, api.EnvGetRequest{SandboxID: id, Key: "GREETING"}); v.Set {
		t.Errorf("env::get of a deleted variable: %+v", v)
	}
	for _, bad := range []api.EnvSetRequest{
		{SandboxID: id},
		{SandboxID: id, Env: api.Env{"1BAD=x"}},
		{SandboxID: id, Env: api.Env{"NOEQUALS"}},
		{SandboxID: id, Env: api.Env{"BIG=" + strings.Repeat("x", maxEnvBytes)}},
	} {
		_, err := m.SetEnv(ctx, bad)
		wantCode(t, err, errdefs.CodeMalformed)
	}
	_, err = m.DeleteEnv(ctx, api.EnvDeleteRequest{SandboxID: id, Keys: []string{"a-b"}})
	wantCode(t, err, errdefs.CodeMalformed)
	if got := printenv("FROM_CREATE"); got != "2" {
		t.Errorf("refused changes changed the env: FROM_CREATE=%q", got)
	}
	_, err = m.SetEnv(as("someone else"), api.EnvSetRequest{SandboxID: id, Env: api.Env{"X=1"}})
	wantCode(t, err, errdefs.CodeNotFound)
}
