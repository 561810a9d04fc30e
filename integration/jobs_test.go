package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Queued jobs (issue 18): retried on a new sandbox when theirs dies under
// them, dead-lettered when they keep failing and retried from there,
// kept across a daemon restart.

// waitJob waits until job id has ended and returns it.
func waitJob(t *testing.T, d *daemon, id string) api.JobInfo {
	t.Helper()
	var info api.JobInfo
	if !testutil.Poll(3*time.Minute, func() bool {
		var err error
		info, err = d.c.GetJob(context.Background(), id)
		return err == nil && info.State != api.JobQueued && info.State != api.JobRunning
	}) {
		t.Fatalf("job %s did not end: %+v", id, info)
	}
	return info
}

// killSandboxProcesses kills every host process of sandbox id's cgroup
// with SIGKILL, as a crash of its runtime would.
func killSandboxProcesses(t *testing.T, id string) {
	t.Helper()
	procs, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/pids/hutch", id, "cgroup.procs"))
	if err != nil {
		procs, err = os.ReadFile(filepath.Join("/sys/fs/cgroup/hutch", id, "cgroup.procs"))
	}
	if err != nil {
		t.Fatalf("the processes of sandbox %s: %v", id, err)
	}
	for _, f := range strings.Fields(string(procs)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestJobRetriedWhenItsSandboxDies(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	job, err := d.c.SubmitJob(ctx, api.JobSubmitRequest{Image: "python", Argv: []string{"sh", "-c", "sleep 3; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	var first api.JobInfo
	if !testutil.Poll(2*time.Minute, func() bool {
		first, err = d.c.GetJob(ctx, job.JobID)
		return err == nil && first.State == api.JobRunning && first.SandboxID != ""
	}) {
		t.Fatalf("the job did not start: %+v %v", first, err)
	}
	killSandboxProcesses(t, first.SandboxID)
	info := waitJob(t, d, job.JobID)
	if info.State != api.JobSucceeded || info.Attempts != 2 || info.SandboxID == first.SandboxID || info.Result == nil || info.Result.Stdout != "done\n" {
		t.Fatalf("job after its sandbox died: %+v", info)
	}
	// Both sandboxes are stopped: the killed one and the job's second.
	for _, id := range []string{first.SandboxID, info.SandboxID} {
		if !testutil.Poll(30*time.Second, func() bool { return sandboxState(t, d, id).Stopped }) {
			t.Errorf("sandbox %s of the job still runs", id)
		}
	}
	list, err := d.c.ListEvents(ctx, api.EventsRequest{Type: "job.*"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range list.Events {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "job.queued job.started job.retrying job.started job.finished" {
		t.Errorf("job events: %s", got)
	}
}

func TestJobDeadLetterAndRetry(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	// Through the CLI: a job that always fails, retried once, then dead.
	out, errOut, code := d.cli("", "job", "submit", "--sandbox", id, "--retries", "1", "--retry-on-exit", "--wait", "--",
		"sh", "-c", "test -e /root/ready || { echo not yet >&2; exit 3; }; echo ok")
	if code != 3 || !strings.Contains(errOut, "dead after 2 attempts") || !strings.Contains(errOut, "not yet") {
		t.Fatalf("job submit --wait: code %d stdout %q stderr %q", code, out, errOut)
	}
	dlq, err := d.c.DeadLetters(ctx, api.JobListRequest{})
	if err != nil || len(dlq.Jobs) != 1 || dlq.Jobs[0].Result == nil || *dlq.Jobs[0].Result.ExitCode != 3 {
		t.Fatalf("dead letters %+v %v", dlq, err)
	}
	dead := dlq.Jobs[0]
	if out, _, code := d.cli("", "job", "dlq"); code != 0 || !strings.Contains(out, dead.JobID) {
		t.Errorf("hutch job dlq: %d %q", code, out)
	}
	// Fixed, and retried from the dead-letter list over REST: it succeeds.
	d.exec(id, "touch", "/root/ready")
	if status, body := d.raw("POST", "/v1/dlq/"+dead.JobID+"/retry", "", ""); status != 200 || !strings.Contains(body, `"queued"`) {
		t.Fatalf("retry: %d %s", status, body)
	}
	if info := waitJob(t, d, dead.JobID); info.State != api.JobSucceeded || info.Result.Stdout != "ok\n" {
		t.Fatalf("retried job %+v", info)
	}
	if status, body := d.raw("POST", "/v1/dlq/"+dead.JobID+"/retry", "", ""); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("retrying a job that succeeded: %d %s", status, body)
	}
	// Bad submissions change nothing.
	if status, body := d.raw("POST", "/v1/jobs", "", `{"cmd":"true"}`); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("a job without a sandbox: %d %s", status, body)
	}
	if status, body := d.raw("POST", "/v1/jobs", "", `{"sandbox_id":"`+id+`"}`); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("a job without a command: %d %s", status, body)
	}
	if list, _ := d.c.ListJobs(ctx, api.JobListRequest{}); len(list.Jobs) != 1 {
		t.Errorf("jobs after bad submissions: %+v", list.Jobs)
	}
	// A running job is cancelled: its exec is killed.
	long, err := d.c.SubmitJob(ctx, api.JobSubmitRequest{SandboxID: id, Cmd: "sleep", Args: []string{"600"}})
	if err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(time.Minute, func() bool { j, _ := d.c.GetJob(ctx, long.JobID); return j.State == api.JobRunning }) {
		t.Fatal("the long job did not start")
	}
	if info, err := d.c.CancelJob(ctx, long.JobID); err != nil || info.State != api.JobCancelled {
		t.Fatalf("cancel: %+v %v", info, err)
	}
	if res := d.exec(id, "sh", "-c", "pgrep -x sleep || true"); strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("the cancelled job's sleep still runs: %q", res.Stdout)
	}
}

func TestPendingJobsSurviveARestart(t *testing.T) {
	d := startDaemon(t, baseConfig("jobs_max_running: 1\n"))
	ctx := context.Background()
	running, err := d.c.SubmitJob(ctx, api.JobSubmitRequest{Image: "python", Cmd: "sleep", Args: []string{"2"}})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := d.c.SubmitJob(ctx, api.JobSubmitRequest{Image: "python", Cmd: "echo", Args: []string{"later"}})
	if err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(2*time.Minute, func() bool { j, _ := d.c.GetJob(ctx, running.JobID); return j.State == api.JobRunning }) {
		t.Fatal("the first job did not start")
	}
	d.terminate()
	d.start()
	first, second := waitJob(t, d, running.JobID), waitJob(t, d, pending.JobID)
	if first.State != api.JobSucceeded || first.Attempts != 1 {
		t.Errorf("the job interrupted by the restart: %+v", first)
	}
	if second.State != api.JobSucceeded || second.Result.Stdout != "later\n" {
		t.Errorf("the pending job: %+v", second)
	}
}

// TestJobsShareSlotsBetweenOwners (issue 33, item 5): with two slots, two
// long jobs of one owner do not keep another owner's job queued: an owner
// runs at most jobs_max_running_per_owner (by default one less than
// jobs_max_running) at once.
func TestJobsShareSlotsBetweenOwners(t *testing.T) {
	d := startDaemon(t, baseConfig("jobs_max_running: 2\nmax_exec_timeout_ms: 1200000\napi_tokens:\n  alice: "+aliceToken+"\n  bob: "+bobToken+"\n"))
	ctx := context.Background()
	alice, bob := client.New(d.url, aliceToken), client.New(d.url, bobToken)
	d.c = alice
	a1, a2 := d.create(api.CreateRequest{Image: "python"}), d.create(api.CreateRequest{Image: "python"})
	d.c = bob
	b := d.create(api.CreateRequest{Image: "python"})
	var long []string
	for _, id := range []string{a1, a2} {
		j, err := alice.SubmitJob(ctx, api.JobSubmitRequest{SandboxID: id, Cmd: "sleep", Args: []string{"1200"}, TimeoutMs: 1200000})
		if err != nil {
			t.Fatal(err)
		}
		long = append(long, j.JobID)
	}
	if !testutil.Poll(time.Minute, func() bool { j, _ := alice.GetJob(ctx, long[0]); return j.State == api.JobRunning }) {
		t.Fatal("alice's first job did not start")
	}
	hi, err := bob.SubmitJob(ctx, api.JobSubmitRequest{SandboxID: b, Cmd: "echo", Args: []string{"hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if info := waitJob(t, d, hi.JobID); info.State != api.JobSucceeded || info.Result.Stdout != "hi\n" {
		t.Fatalf("bob's job: %+v", info)
	}
	if j, err := alice.GetJob(ctx, long[1]); err != nil || j.State != api.JobQueued {
		t.Errorf("alice's second job: %+v, %v; want it queued behind her first", j, err)
	}
	for _, id := range long {
		if _, err := alice.CancelJob(ctx, id); err != nil {
			t.Error(err)
		}
	}
}
