package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// These tests drive the manager over the in-process runtime
// (internal/runtime/runtimetest): real agents, no root.

func TestCreateExecStop(t *testing.T) {
	m, rt, obs := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	out, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"echo", "hello"}})
	if err != nil || out.Stdout != "hello\n" || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", out, err)
	}
	if info, err := m.Get(ctx, api.GetRequest{SandboxID: id}); err != nil || info.Stopped || info.StopCause != "" {
		t.Fatalf("Get of a running sandbox = %+v, %v", info, err)
	}
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	if inst := rt.Instance(id); !inst.Destroyed() || !inst.Ended() {
		t.Error("a stopped sandbox's instance was not destroyed")
	}
	stoppedWith(t, m, id, "request", "stopped by request")
	_, err = m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
	wantCode(t, err, errdefs.CodeStopped)
	if !strings.Contains(err.Error(), "stopped by request") {
		t.Errorf("exec on a stopped sandbox: %v; want its reason", err)
	}
	recs, _, err := m.store.all()
	if err != nil || len(recs) != 1 || recs[0].StopCause != runtime.CauseRequest || !recs[0].Stopped {
		t.Errorf("stored records = %+v, %v; want one stopped by request", recs, err)
	}
	if got := obs.list(); !contains(got, "stopped:request") {
		t.Errorf("observer got %v, want a request stop", got)
	}
}

func TestExecSlots(t *testing.T) {
	m, _, _ := inprocess(t, func(c *config.Config) { c.MaxConcurrentExecPerSandbox = 1 })
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	sb, release, err := m.acquire(ctx, id, UseExec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
	wantCode(t, err, errdefs.CodeExecBusy)
	release()
	if len(sb.slots) != 0 {
		t.Fatalf("%d slots held after release", len(sb.slots))
	}
	if _, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}}); err != nil {
		t.Fatalf("exec once the slot is free: %v", err)
	}
}

func TestAcquireChecksOwnerAndState(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	_, _, err := m.acquire(as("mallory"), id, UseCall)
	wantCode(t, err, errdefs.CodeNotFound)
	_, _, err = m.acquire(context.Background(), "nope", UseCall)
	wantCode(t, err, errdefs.CodeMalformed)

	sb, _ := m.lookup(context.Background(), id)
	if err := sb.transition(Pausing); err != nil {
		t.Fatal(err)
	}
	_, _, err = m.acquire(context.Background(), id, UseRead)
	wantCode(t, err, errdefs.CodePaused)
	if !strings.Contains(err.Error(), "pausing") {
		t.Errorf("acquire of a pausing sandbox: %v; want its state named", err)
	}
}

func TestIdleSandboxIsReaped(t *testing.T) {
	m, rt, obs := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 1})
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, err := m.Get(context.Background(), api.GetRequest{SandboxID: id})
		return errdefs.Is(err, errdefs.CodeNotFound)
	}, "the idle sandbox is reaped and forgotten")
	if !rt.Instance(id).Destroyed() {
		t.Error("a reaped sandbox's instance was not destroyed")
	}
	if got := obs.list(); !contains(got, "stopped:idle") {
		t.Errorf("observer got %v, want an idle stop", got)
	}
}

func TestDyingInstanceEndsItsSandbox(t *testing.T) {
	m, rt, obs := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	rt.Instance(id).Die(runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory (limit 512 MiB)"})
	stoppedWith(t, m, id, "out_of_memory", "out of memory (limit 512 MiB)")
	testutil.Eventually(t, 30*time.Second, func() bool { return contains(obs.list(), "stopped:out_of_memory") }, "the observer hears of it")
}

func TestStuckAgentEndsItsSandbox(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	rt.Instance(id).Freeze()
	// The call's deadline is its timeout plus agentclient's exec grace.
	_, err := m.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"true"}, TimeoutMs: 100})
	wantCode(t, err, errdefs.CodeStopped)
	if !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("exec on a stuck agent: %v; want it named", err)
	}
	stoppedWith(t, m, id, "agent_failure", "")
	testutil.Eventually(t, 30*time.Second, func() bool { return rt.Instance(id).Destroyed() }, "the stuck sandbox's instance is destroyed")
}

// TestFsFailureEndsItsSandbox checks that the fs side follows the one
// failure policy: an agent that broke a deadline or sent what it may not
// during a filesystem call ends its sandbox. (A real stuck fs call takes
// agentclient.FSCallTimeout, two minutes, to be called so.)
func TestFsFailureEndsItsSandbox(t *testing.T) {
	for name, agentErr := range map[string]error{
		"no answer": fmt.Errorf("fs ls: %w", &agentclient.NoAnswerError{After: agentclient.FSCallTimeout}),
		"too large": errors.New("fs read: the agent sent 9 bytes, more than the 8 asked for"),
	} {
		t.Run(name, func(t *testing.T) {
			m, rt, _ := inprocess(t, nil)
			id := create(t, m, api.CreateRequest{Image: "python"})
			sb, _ := m.lookup(context.Background(), id)
			err := handle{m: m, sb: sb}.FsFail(context.Background(), "fs::ls", agentErr)
			wantCode(t, err, errdefs.CodeStopped)
			stoppedWith(t, m, id, "agent_failure", "")
			testutil.Eventually(t, 30*time.Second, func() bool { return rt.Instance(id).Destroyed() }, "the instance is destroyed")
		})
	}
}

func TestShutdownEndsCreatesInFlight(t *testing.T) {
	// Two boots at once: the third create waits in line for a slot.
	m, rt, _ := inprocess(t, func(c *config.Config) { c.MaxConcurrentBoots = 2 })
	const n = 3
	entered := make(chan struct{}, n)
	var returned atomic.Int32
	rt.BeforeStart(func(ctx context.Context, _ runtime.Spec) error {
		entered <- struct{}{}
		<-ctx.Done() // a boot that only a shutdown ends
		returned.Add(1)
		return ctx.Err()
	})
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := m.Create(context.Background(), api.CreateRequest{Image: "python"})
			errs <- err
		}()
	}
	for range n - 1 {
		<-entered
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		return m.boots.Waiting(int(bootForCreate)) == 1
	}, "the third create waits for a boot slot")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := returned.Load(); got != n-1 {
		t.Fatalf("Close returned while %d of %d boots were still under way", n-1-got, n-1)
	}
	for range n {
		wantCode(t, <-errs, errdefs.CodeShuttingDown)
	}
	_, err := m.Create(context.Background(), api.CreateRequest{Image: "python"})
	wantCode(t, err, errdefs.CodeShuttingDown)
}

// TestShutdownRacesCreates runs creates against Close: whatever wins,
// nothing is written to the closed store (the race detector and bbolt
// would say) and no instance outlives Close.
func TestShutdownRacesCreates(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Create(context.Background(), api.CreateRequest{Image: "python"})
			if err != nil && !errdefs.Is(err, errdefs.CodeShuttingDown) {
				t.Errorf("create racing Close: %v; want success or S301", err)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if n := rt.Running(); n != 0 {
		t.Errorf("%d instances outlived Close", n)
	}
}

func TestWarmPoolClaimRefillShed(t *testing.T) {
	m, rt, _ := inprocess(t, func(c *config.Config) {
		c.WarmPool = map[string]int{"python": 1}
		c.MaxConcurrentSandboxes = 2
	})
	ready := func(n int) func() bool {
		return func() bool { return m.WarmPool()[0].Ready == n }
	}
	testutil.Eventually(t, 30*time.Second, ready(1), "the pool fills")
	pooled := rt.Instances()[0].Spec.ID

	// Claim, with less memory than the pool's shape: a resize.
	id := create(t, m, api.CreateRequest{Image: "python", MemoryMB: 256})
	if id != pooled {
		t.Fatalf("create got %s, want the pool's %s", id, pooled)
	}
	if _, mem := rt.Instance(id).Limits(); mem != 256 {
		t.Errorf("claimed sandbox has %d MiB, want 256", mem)
	}
	if st := m.WarmPool()[0]; st.Claims[warmpool.Hit] != 1 {
		t.Errorf("claims = %v, want one hit", st.Claims)
	}
	if out, err := m.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"true"}}); err != nil || !out.Success {
		t.Fatalf("exec on a claimed sandbox = %+v, %v", out, err)
	}

	// Refill.
	testutil.Eventually(t, 30*time.Second, ready(1), "the pool refills")
	var refill string
	for _, inst := range rt.Instances() {
		if inst.Spec.ID != id {
			refill = inst.Spec.ID
		}
	}

	// Shed: one live, one pooled, max 2: a create of an image without a
	// pool discards the pooled sandbox to make room.
	other := create(t, m, api.CreateRequest{Image: "node"})
	testutil.Eventually(t, 30*time.Second, func() bool { return rt.Instance(refill).Destroyed() }, "the pooled sandbox is discarded")
	if m.Live() != 2 {
		t.Errorf("Live = %d, want 2", m.Live())
	}
	if _, err := m.Get(context.Background(), api.GetRequest{SandboxID: other}); err != nil {
		t.Fatal(err)
	}
	// At capacity the pool stays empty, and a discarded pool sandbox was
	// never anyone's: not recorded, not listed.
	if st := m.WarmPool()[0]; st.Ready != 0 {
		t.Errorf("pool at capacity holds %d", st.Ready)
	}
	recs, _, _ := m.store.all()
	for _, r := range recs {
		if r.ID == refill {
			t.Errorf("a discarded pool sandbox was recorded: %+v", r)
		}
	}
}

func TestReplaceWhileQuiesced(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	sb, _ := m.lookup(ctx, id)
	oldInst, oldAgent := sb.conn()

	if _, _, err := sb.replace(oldInst, oldAgent); err == nil {
		t.Fatal("replace on a running sandbox was allowed")
	}
	if err := sb.transition(Checkpointing); err != nil {
		t.Fatal(err)
	}
	// The instance goes away under the checkpoint: not the sandbox's end.
	rt.Instance(id).Die(runtime.End{Cause: runtime.CauseExited, Detail: "checkpointed"})
	<-oldAgent.Done()

	// Restore: a new instance and connection replace the old ones.
	inst, err := rt.Start(ctx, runtime.Spec{ID: id + "-restored"})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := m.connect(ctx, inst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sb.replace(inst, ac); err != nil {
		t.Fatal(err)
	}
	for _, to := range []State{Paused, Resuming, Running} {
		if err := sb.transition(to); err != nil {
			t.Fatalf("to %s: %v (the watcher took the old instance's death for the sandbox's?)", to, err)
		}
	}
	out, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"echo", "back"}})
	if err != nil || out.Stdout != "back\n" {
		t.Fatalf("exec after the replace = %+v, %v", out, err)
	}
	// The watcher follows the new instance.
	rt.Instance(id + "-restored").Die(runtime.End{Cause: runtime.CausePidsLimit, Detail: "process limit reached"})
	stoppedWith(t, m, id, "pids_limit", "process limit reached")
}

func TestRecordWithoutStopCauseLoads(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore(dir + "/hutch.db")
	if err != nil {
		t.Fatal(err)
	}
	const id = "00000000-0000-4000-8000-000000000001"
	old := `{"id":"` + id + `","image":"python","image_id":"x","runtime":"gvisor","cpus":1,"memory_mb":512,"network":false,"idle_timeout_secs":300,"created_at":"2026-01-01T00:00:00Z","stopped":true,"stop_reason":"idle timeout","stopped_at":"` + time.Now().UTC().Format(time.RFC3339) + `"}`
	if err := st.sandboxes.Put(id, json.RawMessage(old)); err != nil {
		t.Fatal(err)
	}
	st.close()
	rt := runtimetest.New(t)
	m, err := New(context.Background(), Options{Config: config.Default(), Runtimes: runtime.Single(rt), Images: &testImages{rootfs: dir}, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	info, err := m.Get(context.Background(), api.GetRequest{SandboxID: id})
	if err != nil || !info.Stopped || info.StopReason != "idle timeout" || info.StopCause != string(runtime.CauseExited) {
		t.Errorf("old record = %+v, %v; want stopped, its reason kept, cause exited", info, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
