package sandbox

import (
	"context"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestHandleEnv checks the core's side of sandbox::env::* (envsvc):
// Handle.ChangeEnv changes the env later execs start from, under their
// own, and records it; UseRecord finds the caller's sandbox in any state
// but ended.
func TestHandleEnv(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python", Env: api.Env{"FROM_CREATE=1"}})
	printenv := func(key string, env api.Env) string {
		t.Helper()
		r, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "printf %s \"$" + key + "\""}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return r.Stdout
	}
	h, release, err := m.Acquire(ctx, id, UseRecord)
	if err != nil {
		t.Fatal(err)
	}
	own, effective := h.Env()
	if len(own) != 1 || own[0] != "FROM_CREATE=1" || len(effective) < 2 {
		t.Errorf("env of a new sandbox: own %q, effective %q", own, effective)
	}
	if err := h.ChangeEnv(func(own []string) ([]string, error) { return MergeEnv(own, []string{"GREETING=hello"}), nil }); err != nil {
		t.Fatal(err)
	}
	refused := errdefs.Malformed("no")
	if err := h.ChangeEnv(func([]string) ([]string, error) { return nil, refused }); err != refused {
		t.Errorf("a refused change answered %v", err)
	}
	release()
	if got := printenv("GREETING", nil); got != "hello" {
		t.Errorf("an exec after ChangeEnv sees GREETING=%q", got)
	}
	if got := printenv("GREETING", api.Env{"GREETING=mine"}); got != "mine" {
		t.Errorf("exec env over the sandbox's: %q", got)
	}
	recs, _, err := m.store.all()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.ID == id && len(rec.Env) != 2 {
			t.Errorf("the store holds env %q", rec.Env)
		}
	}
	_, _, err = m.Acquire(as("someone else"), id, UseRecord)
	wantCode(t, err, errdefs.CodeNotFound)
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Acquire(ctx, id, UseRecord)
	wantCode(t, err, errdefs.CodeStopped)
}
