package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
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
	if err := h.ChangeEnv(func(own []string) ([]string, error) { return spec.MergeEnv(own, []string{"GREETING=hello"}), nil }); err != nil {
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

// TestHandleExec checks the core's side of a service's exec (gitsvc):
// Handle.Exec runs through the agent with the sandbox's env under the
// call's, caps output, and records its exec.started event; the other
// answers of Handle come from the sandbox's image and the daemon's config.
func TestHandleExec(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python", Env: api.Env{"FROM_CREATE=1"}})
	h, release, err := m.Acquire(ctx, id, UseExec)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	resp, err := h.Exec(ctx, ExecCall{Argv: []string{"sh", "-c", `printf %s "$FROM_CREATE$MINE"; exit 3`}, Env: []string{"MINE=2"},
		TimeoutMs: 10_000, Op: "test", Started: map[string]any{"command": "sh", "service": "test"}})
	if err != nil || string(resp.Stdout) != "12" || !resp.Exited || resp.ExitCode != 3 {
		t.Fatalf("exec: %+v, %v", resp, err)
	}
	resp, err = h.Exec(ctx, ExecCall{Argv: []string{"sh", "-c", "printf 1234567890"}, TimeoutMs: 10_000, MaxOutputBytes: 4})
	if err != nil || string(resp.Stdout) != "1234" || !resp.StdoutTruncated {
		t.Errorf("exec capped at 4 bytes: %+v, %v", resp, err)
	}
	evs := logged(t, m, id, "")
	found := false
	for _, ev := range evs {
		found = found || (ev.Type == api.EventExecStarted && strings.Contains(string(ev.Data), `"service":"test"`))
	}
	if !found {
		t.Errorf("no exec.started event of the call: %+v", evs)
	}
	if got := h.ExecTimeout(0); got != m.cfg.DefaultExecTimeoutMs {
		t.Errorf("ExecTimeout(0) = %d, want the default %d", got, m.cfg.DefaultExecTimeoutMs)
	}
	if got := h.ExecTimeout(m.cfg.MaxExecTimeoutMs + 1); got != m.cfg.MaxExecTimeoutMs {
		t.Errorf("ExecTimeout over the max = %d, want %d", got, m.cfg.MaxExecTimeoutMs)
	}
	if h.ID() != id || h.Workdir() == "" || h.Home("") != "" || !strings.Contains(h.Fix("git"), "git") {
		t.Errorf("handle: id %q, workdir %q, home %q, fix %q", h.ID(), h.Workdir(), h.Home(""), h.Fix("git"))
	}
	if !h.PathMissing(ctx, "/nonexistent/repo") || h.PathMissing(ctx, "/") {
		t.Errorf("PathMissing: /nonexistent/repo %v, / %v", h.PathMissing(ctx, "/nonexistent/repo"), h.PathMissing(ctx, "/"))
	}
}

// TestHandleLifecycle checks the core's side of alertsvc: a handle reads
// the sandbox's state and use, pauses it and stops it.
func TestHandleLifecycle(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	h, release, err := m.Acquire(ctx, id, UseRecord)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if st := h.State(); st != Running {
		t.Fatalf("state %s", st)
	}
	// The in-process runtime reports 1 task.
	if st, err := h.Stats(); err != nil || st.Pids != 1 {
		t.Errorf("stats %+v, %v", st, err)
	}
	if v := h.Vitals(); v.CPUs == 0 || v.MemoryMB == 0 || v.CreatedAt.IsZero() || v.IdleSince.Before(v.CreatedAt) || v.ExecInFlight != 0 || v.Hibernated {
		t.Errorf("vitals %+v", v)
	}
	if err := h.Pause(); err != nil || h.State() != Paused {
		t.Fatalf("pause: %v, state %s", err, h.State())
	}
	if _, err := m.Resume(ctx, api.ResumeRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	h.Stop(runtime.End{Cause: runtime.CauseAlert, Detail: "test"})
	stoppedWith(t, m, id, "alert", "test")
	if st := h.State(); !st.ended() {
		t.Errorf("state after Stop: %s", st)
	}
	select {
	case <-m.Done():
		t.Error("Done is closed before the manager closes")
	default:
	}
}
