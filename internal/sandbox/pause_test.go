package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/idle"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// state returns sandbox id's listed state.
func state(t *testing.T, m *Manager, id string) api.SandboxInfo {
	t.Helper()
	info, err := m.Get(context.Background(), api.GetRequest{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func exec(m *Manager, id string) error {
	_, err := m.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
	return err
}

func TestPauseAndResume(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})

	resp, err := m.Pause(ctx, api.PauseRequest{SandboxID: id})
	if err != nil || resp.State != "paused" || !resp.Changed {
		t.Fatalf("pause = %+v, %v; want paused, changed", resp, err)
	}
	if resp, err := m.Pause(ctx, api.PauseRequest{SandboxID: id, Depth: api.PauseFreeze}); err != nil || resp.Changed {
		t.Errorf("second pause = %+v, %v; want unchanged", resp, err)
	}
	info := state(t, m, id)
	if info.State != "paused" || info.PausedAt == "" || info.Stopped {
		t.Errorf("a paused sandbox is listed as %+v", info)
	}
	wantCode(t, exec(m, id), errdefs.CodePaused)
	_, _, err = m.Acquire(ctx, id, UseCall)
	wantCode(t, err, errdefs.CodePaused)

	if resp, err := m.Resume(ctx, api.ResumeRequest{SandboxID: id}); err != nil || resp.State != "running" || !resp.Changed {
		t.Fatalf("resume = %+v, %v; want running, changed", resp, err)
	}
	if resp, err := m.Resume(ctx, api.ResumeRequest{SandboxID: id}); err != nil || resp.Changed {
		t.Errorf("second resume = %+v, %v; want unchanged", resp, err)
	}
	if err := exec(m, id); err != nil {
		t.Fatalf("exec after resume: %v", err)
	}
	if info := state(t, m, id); info.State != "running" || info.PausedAt != "" {
		t.Errorf("a resumed sandbox is listed as %+v", info)
	}
}

func TestPauseErrors(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	_, err := m.Pause(ctx, api.PauseRequest{SandboxID: id, Depth: "deep"})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = m.Pause(ctx, api.PauseRequest{SandboxID: id, Depth: "hibernate"})
	wantCode(t, err, errdefs.CodeUnsupported)
	_, err = m.Pause(as("mallory"), api.PauseRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = m.Resume(as("mallory"), api.ResumeRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeNotFound)
	if info := state(t, m, id); info.State != "running" {
		t.Fatalf("refused pauses left the sandbox %s", info.State)
	}
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Pause(ctx, api.PauseRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeStopped)
	_, err = m.Resume(ctx, api.ResumeRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeStopped)
}

func TestStopPausedSandbox(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	if _, err := m.Pause(ctx, api.PauseRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	if !rt.Instance(id).Destroyed() {
		t.Error("stopping a paused sandbox did not destroy its instance")
	}
}

func TestAutoResume(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python", AutoResume: true})
	if _, err := m.Pause(ctx, api.PauseRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	if err := exec(m, id); err != nil {
		t.Fatalf("exec on a paused auto_resume sandbox: %v", err)
	}
	if info := state(t, m, id); info.State != "running" || !info.AutoResume {
		t.Errorf("after the exec the sandbox is %+v; want running", info)
	}
}

func TestOnIdlePause(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 1, OnIdle: api.OnIdlePause})
	m.reaper.Reap(time.Now().Add(2 * time.Second))
	testutil.Eventually(t, 30*time.Second, func() bool { return state(t, m, id).State == "paused" }, "the idle sandbox is paused")
	// Paused, it is not idle: later passes leave it paused.
	m.reaper.Reap(time.Now().Add(time.Hour))
	if info := state(t, m, id); info.State != "paused" {
		t.Errorf("a paused sandbox was reaped as idle: %+v", info)
	}
}

func TestPausedRetention(t *testing.T) {
	m, _, _ := inprocess(t, func(c *config.Config) { c.PausedRetentionSecs = 60 })
	id := create(t, m, api.CreateRequest{Image: "python"})
	if _, err := m.Pause(context.Background(), api.PauseRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	m.reaper.Reap(time.Now().Add(30 * time.Second))
	if info := state(t, m, id); info.State != "paused" {
		t.Fatalf("paused for half its retention, the sandbox is %s", info.State)
	}
	m.reaper.Reap(time.Now().Add(61 * time.Second))
	stoppedWith(t, m, id, "idle", idle.EndPausedTooLong.Detail)
}

func TestLifetime(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python", TimeoutSecs: 60})
	info := state(t, m, id)
	if info.TimeoutSecs != 60 || info.ExpiresAt == "" {
		t.Fatalf("a sandbox with a lifetime is listed as %+v", info)
	}
	// Activity does not extend a lifetime; set_timeout does.
	if err := exec(m, id); err != nil {
		t.Fatal(err)
	}
	resp, err := m.SetTimeout(ctx, api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: 3600})
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, resp.ExpiresAt)
	if err != nil || at.Before(time.Now().Add(3500*time.Second)) {
		t.Errorf("set_timeout answered expires_at %q (%v); want an hour from now", resp.ExpiresAt, err)
	}
	m.reaper.Reap(time.Now().Add(120 * time.Second))
	if info := state(t, m, id); info.Stopped {
		t.Fatalf("a renewed sandbox ended at its old lifetime: %+v", info)
	}
	m.reaper.Reap(time.Now().Add(3601 * time.Second))
	stoppedWith(t, m, id, "lifetime", "")

	_, err = m.SetTimeout(ctx, api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: 0})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = m.SetTimeout(ctx, api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: 10})
	wantCode(t, err, errdefs.CodeStopped)
}

func TestCreateTermsAreChecked(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	long := string(make([]byte, 600))
	many := map[string]string{}
	for i := range 65 {
		many[string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	for name, req := range map[string]api.CreateRequest{
		"on_idle":         {Image: "python", OnIdle: "sleep"},
		"timeout_secs":    {Image: "python", TimeoutSecs: config.MaxLifetimeSecs + 1},
		"metadata key":    {Image: "python", Metadata: map[string]string{"bad key": "v"}},
		"metadata value":  {Image: "python", Metadata: map[string]string{"k": "a\x1b[2Jb"}},
		"metadata length": {Image: "python", Metadata: map[string]string{"k": long}},
		"metadata pairs":  {Image: "python", Metadata: many},
	} {
		_, err := m.Create(context.Background(), req)
		if !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%s: create = %v; want S001", name, err)
		}
	}
	if n := len(rt.Instances()); n != 0 {
		t.Errorf("refused creates started %d sandboxes", n)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		team := "red"
		if i%2 == 1 {
			team = "blue"
		}
		ids = append(ids, create(t, m, api.CreateRequest{Image: "python", Metadata: map[string]string{"team": team, "run": "1"}}))
	}
	if _, err := m.Pause(ctx, api.PauseRequest{SandboxID: ids[0]}); err != nil {
		t.Fatal(err)
	}
	list := func(req api.ListRequest) api.ListResponse {
		t.Helper()
		resp, err := m.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if got := list(api.ListRequest{Metadata: map[string]string{"team": "blue"}}); len(got.Sandboxes) != 2 {
		t.Errorf("team=blue lists %d sandboxes, want 2", len(got.Sandboxes))
	}
	if got := list(api.ListRequest{State: []string{"paused"}}); len(got.Sandboxes) != 1 || got.Sandboxes[0].SandboxID != ids[0] {
		t.Errorf("state=paused lists %+v, want only %s", got.Sandboxes, ids[0])
	}
	if got := list(api.ListRequest{State: []string{"running"}, Metadata: map[string]string{"team": "red"}}); len(got.Sandboxes) != 2 {
		t.Errorf("running red sandboxes: %d, want 2", len(got.Sandboxes))
	}
	// Pages of two walk every sandbox once, in creation order.
	var seen []string
	req := api.ListRequest{Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the pages never end")
		}
		resp := list(req)
		for _, s := range resp.Sandboxes {
			seen = append(seen, s.SandboxID)
		}
		if resp.NextToken == "" {
			break
		}
		req.NextToken = resp.NextToken
	}
	if len(seen) != len(ids) {
		t.Fatalf("pages listed %v, want %v", seen, ids)
	}
	for i := range ids {
		if seen[i] != ids[i] {
			t.Fatalf("pages listed %v, want %v", seen, ids)
		}
	}
	for name, req := range map[string]api.ListRequest{
		"state":    {State: []string{"asleep"}},
		"limit":    {Limit: -1},
		"token":    {NextToken: "not-a-token"},
		"metadata": {Metadata: map[string]string{"": "x"}},
	} {
		if _, err := m.List(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("list with a bad %s: %v; want S001", name, err)
		}
	}
	if got, _ := m.List(as("mallory"), api.ListRequest{Metadata: map[string]string{"run": "1"}}); len(got.Sandboxes) != 0 {
		t.Errorf("another owner lists %d sandboxes", len(got.Sandboxes))
	}
}

func TestCallThatOutlivesAFreezeIsNotAnAgentFailure(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	execErr := make(chan error, 1)
	go func() {
		_, err := m.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"sleep", "30"}, TimeoutMs: 100})
		execErr <- err
	}()
	sb, _ := m.lookup(context.Background(), id)
	testutil.Eventually(t, 30*time.Second, func() bool { return len(sb.slots) == 1 }, "the exec is in flight")
	if _, err := m.Pause(context.Background(), api.PauseRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	// Frozen, the agent cannot answer before the call's deadline.
	wantCode(t, <-execErr, errdefs.CodePaused)
	if info := state(t, m, id); info.State != "paused" {
		t.Fatalf("a call that timed out under a freeze left the sandbox %+v", info)
	}
	if _, err := m.Resume(context.Background(), api.ResumeRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	if err := exec(m, id); err != nil {
		t.Errorf("exec after the resume: %v", err)
	}
}

// A files-only pause needs a runtime that captures writable layers: the
// in-process one does not, so the pause is S302 and changes nothing, and
// an on_idle pause_files sandbox ends at its lifetime's end instead.
func TestPauseFilesNeedsLayers(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	_, err := m.Pause(ctx, api.PauseRequest{SandboxID: id, Depth: api.PauseFiles})
	wantCode(t, err, errdefs.CodeUnsupported)
	if info := state(t, m, id); info.State != "running" || info.PauseDepth != "" {
		t.Fatalf("a refused files-only pause left %+v", info)
	}
	if err := exec(m, id); err != nil {
		t.Fatalf("exec after a refused pause: %v", err)
	}
	ends := create(t, m, api.CreateRequest{Image: "python", TimeoutSecs: 1, OnIdle: api.OnIdlePauseFiles})
	if info := state(t, m, ends); info.OnIdle != api.OnIdlePauseFiles {
		t.Fatalf("on_idle = %q", info.OnIdle)
	}
	m.reaper.Reap(time.Now().Add(2 * time.Second))
	testutil.Eventually(t, 30*time.Second, func() bool { return state(t, m, ends).Stopped }, "the sandbox that cannot pause to its files ends")
}
