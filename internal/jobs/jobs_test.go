package jobs

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fake runs execs by script: each command's outcomes in turn (the last
// repeats); "block" waits until the exec's context ends.
type fake struct {
	mu       sync.Mutex
	outcomes map[string][]string // command → "exit N", "die", "block"
	calls    map[string]int
	order    []string // commands as they started
	live     map[string]bool
	created  int
	started  chan string
}

func newFake() *fake {
	return &fake{outcomes: map[string][]string{}, calls: map[string]int{}, live: map[string]bool{"sb": true}, started: make(chan string, 100)}
}

func (f *fake) Create(_ context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	if req.Image == "forbidden" {
		return api.CreateResponse{}, errdefs.New(errdefs.CodeImageNotAllowed, "not allowed")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created++
	id := fmt.Sprintf("new-%d", f.created)
	f.live[id] = true
	return api.CreateResponse{SandboxID: id}, nil
}

func (f *fake) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	f.mu.Lock()
	outs := f.outcomes[req.Cmd]
	n := f.calls[req.Cmd]
	f.calls[req.Cmd]++
	f.order = append(f.order, req.Cmd)
	out := "exit 0"
	if len(outs) > 0 {
		out = outs[min(n, len(outs)-1)]
	}
	f.mu.Unlock()
	f.started <- req.Cmd
	var code int
	switch {
	case out == "die":
		f.mu.Lock()
		delete(f.live, req.SandboxID)
		f.mu.Unlock()
		return api.ExecResponse{}, errdefs.New(errdefs.CodeStopped, "sandbox %s stopped: agent failure", req.SandboxID)
	case out == "block":
		<-ctx.Done()
		return api.ExecResponse{}, ctx.Err()
	default:
		fmt.Sscanf(out, "exit %d", &code)
	}
	return api.ExecResponse{ExitCode: &code, Success: code == 0, Stdout: req.Cmd + "\n"}, nil
}

func (f *fake) Stop(_ context.Context, req api.StopRequest) (api.StopResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, req.SandboxID)
	return api.StopResponse{}, nil
}

func (f *fake) Get(_ context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.SandboxID != "sb" {
		return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "no sandbox %s", req.SandboxID)
	}
	return api.SandboxInfo{SandboxID: "sb", Stopped: !f.live["sb"]}, nil
}

func (f *fake) script(cmd string, outcomes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes[cmd] = outcomes
}

func open(t *testing.T, f *fake, path string) *Runner {
	t.Helper()
	r, err := Open(path, f, Options{MaxRunning: 2, Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitState waits until job id reaches state.
func waitState(t *testing.T, r *Runner, ctx context.Context, id, state string) api.JobInfo {
	t.Helper()
	var info api.JobInfo
	var err error
	if !testutil.Poll(30*time.Second, func() bool {
		info, err = r.Get(ctx, api.JobRequest{JobID: id})
		return err != nil || info.State == state
	}) {
		t.Fatalf("job %s is %s (%+v), want %s", id, info.State, info, state)
	}
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func submit(t *testing.T, r *Runner, ctx context.Context, req api.JobSubmitRequest) string {
	t.Helper()
	info, err := r.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return info.JobID
}

func TestJobsRunRetryAndDie(t *testing.T) {
	f := newFake()
	r := open(t, f, filepath.Join(t.TempDir(), "jobs.db"))
	defer r.Close()
	ctx := auth.WithOwner(context.Background(), "alice")

	// A job in a sandbox of its own whose sandbox dies twice is retried
	// in new sandboxes and succeeds; each of them is stopped.
	f.script("flaky", "die", "die", "exit 0")
	id := submit(t, r, ctx, api.JobSubmitRequest{Image: "python", Cmd: "flaky"})
	info := waitState(t, r, ctx, id, api.JobSucceeded)
	if info.Attempts != 3 || info.Result == nil || *info.Result.ExitCode != 0 || info.SandboxID != "new-3" {
		t.Errorf("flaky job %+v", info)
	}
	f.mu.Lock()
	if len(f.live) != 1 || !f.live["sb"] {
		t.Errorf("sandboxes left: %v", f.live)
	}
	f.mu.Unlock()

	// A non-zero exit is the job's result, not retried, unless asked.
	f.script("false", "exit 1")
	id = submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "false"})
	if info := waitState(t, r, ctx, id, api.JobFailed); info.Attempts != 1 || *info.Result.ExitCode != 1 {
		t.Errorf("failing job %+v", info)
	}
	one := 1
	id = submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "false", RetryOnExit: true, MaxRetries: &one})
	if info := waitState(t, r, ctx, id, api.JobDead); info.Attempts != 2 {
		t.Errorf("job retried on exit %+v", info)
	}
	dlq, err := r.DeadLetters(ctx, api.JobListRequest{})
	if err != nil || len(dlq.Jobs) != 1 || dlq.Jobs[0].JobID != id {
		t.Fatalf("dead letters %+v %v", dlq, err)
	}
	// Retried from the dead-letter list, it runs again.
	f.script("false", "exit 0")
	if _, err := r.Retry(ctx, api.JobRequest{JobID: id}); err != nil {
		t.Fatal(err)
	}
	if info := waitState(t, r, ctx, id, api.JobSucceeded); info.Attempts != 1 {
		t.Errorf("retried job %+v", info)
	}

	// A create the daemon refuses is dead at once, with its error.
	id = submit(t, r, ctx, api.JobSubmitRequest{Image: "forbidden", Cmd: "x"})
	if info := waitState(t, r, ctx, id, api.JobDead); info.Attempts != 1 || info.Error == nil || info.Error.Code != "S100" {
		t.Errorf("refused job %+v", info)
	}

	// Another owner sees none of it.
	bob := auth.WithOwner(context.Background(), "bob")
	if _, err := r.Get(bob, api.JobRequest{JobID: id}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("bob gets alice's job: %v", err)
	}
	if list, _ := r.List(bob, api.JobListRequest{}); len(list.Jobs) != 0 {
		t.Errorf("bob lists %+v", list.Jobs)
	}
	if _, err := r.Retry(bob, api.JobRequest{JobID: id}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("bob retries alice's job: %v", err)
	}
}

func TestJobsOrderPerSandboxAndCancel(t *testing.T) {
	f := newFake()
	r := open(t, f, filepath.Join(t.TempDir(), "jobs.db"))
	defer r.Close()
	ctx := auth.WithOwner(context.Background(), "alice")
	f.script("first", "block")
	first := submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "first"})
	second := submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "second"})
	waitState(t, r, ctx, first, api.JobRunning)
	if info, _ := r.Get(ctx, api.JobRequest{JobID: second}); info.State != api.JobQueued {
		t.Fatalf("the second job for the sandbox is %s while the first runs", info.State)
	}
	// Cancelling a queued job ends it; cancelling the running one kills
	// its exec, and the next job runs.
	third := submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "third"})
	if info, err := r.Cancel(ctx, api.JobRequest{JobID: second}); err != nil || info.State != api.JobCancelled {
		t.Fatalf("cancel queued: %+v %v", info, err)
	}
	if info, err := r.Cancel(ctx, api.JobRequest{JobID: first}); err != nil || info.State != api.JobCancelled {
		t.Fatalf("cancel running: %+v %v", info, err)
	}
	waitState(t, r, ctx, third, api.JobSucceeded)
	f.mu.Lock()
	if fmt.Sprint(f.order) != "[first third]" {
		t.Errorf("ran %v", f.order)
	}
	f.mu.Unlock()
	if _, err := r.Cancel(ctx, api.JobRequest{JobID: third}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("cancelling an ended job: %v", err)
	}
}

func TestJobsSurviveARestart(t *testing.T) {
	f := newFake()
	path := filepath.Join(t.TempDir(), "jobs.db")
	r := open(t, f, path)
	ctx := auth.WithOwner(context.Background(), "alice")
	f.script("long", "block")
	long := submit(t, r, ctx, api.JobSubmitRequest{Image: "python", Cmd: "long"})
	<-f.started
	waitState(t, r, ctx, long, api.JobRunning)
	queued := submit(t, r, ctx, api.JobSubmitRequest{SandboxID: "sb", Cmd: "later"})
	_ = queued
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Open again: the interrupted job runs again, its attempt not
	// counted; the queued one runs.
	f.script("long", "exit 0")
	r = open(t, f, path)
	defer r.Close()
	if info := waitState(t, r, ctx, long, api.JobSucceeded); info.Attempts != 1 {
		t.Errorf("interrupted job %+v", info)
	}
	waitState(t, r, ctx, queued, api.JobSucceeded)
}

func TestJobSubmitChecks(t *testing.T) {
	f := newFake()
	r := open(t, f, filepath.Join(t.TempDir(), "jobs.db"))
	defer r.Close()
	ctx := auth.WithOwner(context.Background(), "alice")
	eleven := 11
	for name, req := range map[string]api.JobSubmitRequest{
		"no target":   {Cmd: "x"},
		"two targets": {SandboxID: "sb", Image: "python", Cmd: "x"},
		"no command":  {SandboxID: "sb"},
		"cmd argv":    {SandboxID: "sb", Cmd: "x", Argv: []string{"x"}},
		"workdir":     {SandboxID: "sb", Cmd: "x", Workdir: "rel"},
		"retries":     {SandboxID: "sb", Cmd: "x", MaxRetries: &eleven},
		"create both": {Image: "python", Create: &api.CreateRequest{Image: "python"}, Cmd: "x"},

		// issue 37: the preview terms are sandbox::create's.
		"create with preview terms": {Create: &api.CreateRequest{Image: "python", Preview: &api.PreviewOptions{Private: true}}, Cmd: "x"},
	} {
		if _, err := r.Submit(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := r.Submit(ctx, api.JobSubmitRequest{SandboxID: "other", Cmd: "x"}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("unknown sandbox: %v", err)
	}
	if list, _ := r.List(ctx, api.JobListRequest{}); len(list.Jobs) != 0 {
		t.Errorf("refused submissions left jobs: %+v", list.Jobs)
	}
	if _, err := r.List(ctx, api.JobListRequest{State: "sleeping"}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("bad state: %v", err)
	}
}

// TestJobsShareSlotsBetweenOwners: one owner's long jobs do not keep
// another owner's job queued: with two slots an owner runs at most one
// job (the default per-owner cap is one less than the slots).
func TestJobsShareSlotsBetweenOwners(t *testing.T) {
	f := newFake()
	r := open(t, f, filepath.Join(t.TempDir(), "jobs.db"))
	defer r.Close()
	alice := auth.WithOwner(context.Background(), "alice")
	bob := auth.WithOwner(context.Background(), "bob")
	f.script("long", "block")
	a1 := submit(t, r, alice, api.JobSubmitRequest{Image: "python", Cmd: "long"})
	a2 := submit(t, r, alice, api.JobSubmitRequest{Image: "python", Cmd: "long"})
	waitState(t, r, alice, a1, api.JobRunning)
	b1 := submit(t, r, bob, api.JobSubmitRequest{Image: "python", Cmd: "hi"})
	// Bob's job runs to its end while alice's first still runs; her
	// second waits for her first, not for a slot.
	waitState(t, r, bob, b1, api.JobSucceeded)
	if info, _ := r.Get(alice, api.JobRequest{JobID: a1}); info.State != api.JobRunning {
		t.Fatalf("alice's first job is %s", info.State)
	}
	if info, _ := r.Get(alice, api.JobRequest{JobID: a2}); info.State != api.JobQueued {
		t.Fatalf("alice's second job is %s while her first runs and a slot is free", info.State)
	}

	// Each owner keeps to one running job: alice's third and bob's third
	// wait for their own, not for each other's.
	f.script("next", "block")
	a3 := submit(t, r, alice, api.JobSubmitRequest{Image: "python", Cmd: "a3"})
	b2 := submit(t, r, bob, api.JobSubmitRequest{Image: "python", Cmd: "next"})
	waitState(t, r, bob, b2, api.JobRunning) // the free slot
	b3 := submit(t, r, bob, api.JobSubmitRequest{Image: "python", Cmd: "b3"})
	if _, err := r.Cancel(alice, api.JobRequest{JobID: a1}); err != nil {
		t.Fatal(err)
	}
	// a2 takes alice's slot back; b3 waits behind bob's running job, a3
	// behind a2.
	waitState(t, r, alice, a2, api.JobRunning)
	for _, j := range []struct {
		ctx context.Context
		id  string
	}{{alice, a3}, {bob, b3}} {
		if info, _ := r.Get(j.ctx, api.JobRequest{JobID: j.id}); info.State != api.JobQueued {
			t.Errorf("job %s is %s", info.Request.Cmd, info.State)
		}
	}
	// When bob's job ends, his next runs; alice's waits for hers.
	if _, err := r.Cancel(bob, api.JobRequest{JobID: b2}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, bob, b3, api.JobSucceeded)
	if info, _ := r.Get(alice, api.JobRequest{JobID: a3}); info.State != api.JobQueued {
		t.Errorf("alice's third job is %s while her second runs", info.State)
	}
	if _, err := r.Cancel(alice, api.JobRequest{JobID: a2}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, alice, a3, api.JobSucceeded)
	// Each owner's jobs started in their order; how the two owners'
	// starts interleave is the scheduler's (a job is running before its
	// command starts), and the states above already checked the sharing.
	f.mu.Lock()
	defer f.mu.Unlock()
	var mine, his []string
	for _, cmd := range f.order {
		if cmd == "hi" || cmd == "next" || cmd == "b3" {
			his = append(his, cmd)
		} else {
			mine = append(mine, cmd)
		}
	}
	if got := fmt.Sprint(mine, his); got != "[long long a3] [hi next b3]" {
		t.Errorf("started alice's %v and bob's %v, want [long long a3] [hi next b3]", mine, his)
	}
}

// TestJobsRoundRobinOneSlot: with one slot, a freed slot goes to the
// owners who waited (the older job first among them), not to the owner
// whose older jobs fill the queue.
func TestJobsRoundRobinOneSlot(t *testing.T) {
	f := newFake()
	r, err := Open(filepath.Join(t.TempDir(), "jobs.db"), f, Options{MaxRunning: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	alice := auth.WithOwner(context.Background(), "alice")
	bob := auth.WithOwner(context.Background(), "bob")
	f.script("a1", "block")
	a1 := submit(t, r, alice, api.JobSubmitRequest{Image: "python", Cmd: "a1"})
	waitState(t, r, alice, a1, api.JobRunning)
	f.script("a2", "block")
	a2 := submit(t, r, alice, api.JobSubmitRequest{Image: "python", Cmd: "a2"})
	b1 := submit(t, r, bob, api.JobSubmitRequest{Image: "python", Cmd: "b1"})
	// The owner of a daemon without tokens ("") takes turns too.
	local := context.Background()
	l1 := submit(t, r, local, api.JobSubmitRequest{Image: "python", Cmd: "l1"})
	if _, err := r.Cancel(alice, api.JobRequest{JobID: a1}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, bob, b1, api.JobSucceeded)
	waitState(t, r, local, l1, api.JobSucceeded)
	waitState(t, r, alice, a2, api.JobRunning)
	var started []string
	for len(started) < 4 {
		select {
		case cmd := <-f.started:
			started = append(started, cmd)
		case <-time.After(30 * time.Second):
			t.Fatalf("started %v, and no more", started)
		}
	}
	if got := fmt.Sprint(started); got != "[a1 b1 l1 a2]" {
		t.Errorf("started %s, want [a1 b1 l1 a2]", got)
	}
	if _, err := r.Cancel(alice, api.JobRequest{JobID: a2}); err != nil {
		t.Fatal(err)
	}
}
