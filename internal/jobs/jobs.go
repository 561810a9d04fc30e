// Package jobs runs queued jobs: an exec that hutch runs for its caller in
// an existing sandbox or in one it creates for the job (and stops after),
// in submission order per sandbox and round-robin between owners (each
// owner running at most MaxRunningPerOwner at once), retried with
// backoff when the infrastructure failed it (its sandbox died, the agent
// failed, capacity ran out) and, with retry_on_exit, when the command
// failed. A job past its retries, or one that cannot succeed as asked (a
// bad command, a sandbox that is gone), goes to the dead-letter list with
// its last error, from which it may be queued again. Jobs are kept in their own
// bbolt file: queued jobs and the dead-letter list survive restarts, and
// a job running when the daemon stopped runs again (that attempt not
// counted).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/failpoint"
)

// Sandboxes is what jobs run on: the sandbox manager.
type Sandboxes interface {
	Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error)
	Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error)
	Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error)
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
}

// Defaults and bounds.
const (
	DefaultMaxRunning        = 4
	DefaultMaxQueuedPerOwner = 1000
	DefaultMaxKept           = 10000
	defaultMaxRetries        = 3
	maxMaxRetries            = 10
	// maxOutput caps each stream of a result kept in a job.
	maxOutput = 64 << 10
	// maxPage bounds a list's answer.
	maxPage = 1000
	// firstBackoff doubles each retry, up to maxBackoff.
	firstBackoff = time.Second
	maxBackoff   = time.Minute
)

// Options configure a Runner.
type Options struct {
	// MaxRunning bounds the jobs running at once, every owner's.
	MaxRunning int
	// MaxRunningPerOwner bounds one owner's jobs running at once, so that
	// one owner's long jobs cannot hold every slot while another's wait;
	// 0 is one less than MaxRunning (at least 1).
	MaxRunningPerOwner int
	// MaxQueuedPerOwner bounds one owner's queued jobs; one more is S400.
	MaxQueuedPerOwner int
	// MaxKept bounds the jobs kept; past it the oldest ended ones go.
	MaxKept int
	// Events, when set, records job.queued, job.started, job.retrying
	// and job.finished.
	Events *events.Log
	Logger *slog.Logger
	// Backoff is the wait before retry n (1, 2, ...); nil doubles from
	// firstBackoff up to maxBackoff.
	Backoff func(n int) time.Duration
}

// job is a kept job.
type job struct {
	rec *record
	// cancel ends a running attempt; cancelled tells it the caller asked.
	cancel    context.CancelFunc
	cancelled bool
}

// Runner queues, runs and keeps jobs.
type Runner struct {
	sb    Sandboxes
	opts  Options
	log   *slog.Logger
	store *store
	// ctx ends with Close: it cancels running attempts, which go back to
	// the queue.
	ctx     context.Context
	stop    context.CancelFunc
	wake    chan struct{}
	running sync.WaitGroup

	mu sync.Mutex
	// The fields below are guarded by mu.
	jobs   map[string]*job
	order  []*job // by submission
	active int    // attempts running
	closed bool
	// starts counts the attempts started; lastStart is its value when
	// each owner with pending jobs last started one (round-robin).
	starts    uint64
	lastStart map[string]uint64
}

// Open opens the job store at path and starts running its queued jobs.
func Open(path string, sb Sandboxes, opts Options) (*Runner, error) {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.MaxRunningPerOwner <= 0 {
		opts.MaxRunningPerOwner = max(1, opts.MaxRunning-1)
	}
	if opts.MaxQueuedPerOwner <= 0 {
		opts.MaxQueuedPerOwner = DefaultMaxQueuedPerOwner
	}
	if opts.MaxKept <= 0 {
		opts.MaxKept = DefaultMaxKept
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = doubling
	}
	st, err := openStore(path)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Runner{sb: sb, opts: opts, log: opts.Logger.With("component", "jobs"), store: st, ctx: ctx, stop: stop,
		wake: make(chan struct{}, 1), jobs: map[string]*job{}, lastStart: map[string]uint64{}}
	recs, err := st.all(func(seq uint64, err error) { r.log.Warn("skipping an unreadable job", "seq", seq, "err", err) })
	if err != nil {
		st.close()
		stop()
		return nil, fmt.Errorf("reading the job store: %w", err)
	}
	for _, rec := range recs {
		if rec.Info.State == api.JobRunning {
			// The daemon stopped during the attempt: it runs again, not
			// counted against the job's retries.
			rec.Info.State = api.JobQueued
			rec.Info.Attempts--
		}
		j := &job{rec: rec}
		r.jobs[rec.Info.JobID] = j
		r.order = append(r.order, j)
	}
	sort.Slice(r.order, func(a, b int) bool { return r.order[a].rec.Seq < r.order[b].rec.Seq })
	r.running.Add(1)
	go r.schedule()
	return r, nil
}

// doubling is the default backoff.
func doubling(n int) time.Duration {
	d := firstBackoff << min(n-1, 10)
	return min(d, maxBackoff)
}

// Close stops the runner: running attempts are cancelled and go back to
// the queue, to run again at the next start.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stop()
	r.running.Wait()
	return r.store.close()
}

// poke wakes the scheduler.
func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Submit validates and queues a job for the caller (sandbox::job::submit).
func (r *Runner) Submit(ctx context.Context, req api.JobSubmitRequest) (api.JobInfo, error) {
	owner := auth.OwnerFrom(ctx)
	if err := r.check(ctx, &req); err != nil {
		return api.JobInfo{}, err
	}
	r.mu.Lock()
	queued := 0
	for _, j := range r.order {
		if j.rec.Owner == owner && (j.rec.Info.State == api.JobQueued || j.rec.Info.State == api.JobRunning) {
			queued++
		}
	}
	r.mu.Unlock()
	if queued >= r.opts.MaxQueuedPerOwner {
		return api.JobInfo{}, errdefs.New(errdefs.CodeCapacity, "%d of your jobs are queued or running (max_queued_jobs_per_owner); wait for some to end", queued)
	}
	seq, err := r.store.nextSeq()
	if err != nil {
		return api.JobInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "queueing a job")
	}
	now := time.Now().UTC()
	rec := &record{Seq: seq, Owner: owner, Submitted: now, Info: api.JobInfo{
		JobID: uuid.NewString(), State: api.JobQueued, SandboxID: req.SandboxID, Request: req, SubmittedAt: stamp(now)}}
	if err := r.store.put(rec); err != nil {
		return api.JobInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "queueing a job")
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return api.JobInfo{}, errdefs.ShuttingDown()
	}
	j := &job{rec: rec}
	r.jobs[rec.Info.JobID] = j
	r.order = append(r.order, j)
	info := rec.Info
	r.mu.Unlock()
	r.emit(rec, api.EventJobQueued, map[string]any{"job_id": info.JobID})
	r.poke()
	return info, nil
}

// check validates a submission and fills its defaults.
func (r *Runner) check(ctx context.Context, req *api.JobSubmitRequest) error {
	creates := req.Image != "" || req.Template != "" || req.Create != nil
	switch {
	case req.SandboxID != "" && creates:
		return errdefs.Malformed("a job runs in sandbox_id or in a sandbox it creates (image, template, create), not both")
	case req.SandboxID == "" && !creates:
		return errdefs.Malformed("a job needs sandbox_id, or image, template or create for a sandbox of its own")
	case req.Create != nil && (req.Image != "" || req.Template != ""):
		return errdefs.Malformed("give image and template inside create, or without create, not both")
	case req.Create != nil && req.Create.Preview != nil: // issue 37: the terms are sandbox::create's
		return errdefs.Malformed("a job's sandbox takes no preview terms (create.preview): create the sandbox with sandbox::create and give its sandbox_id")
	case req.Cmd == "" && len(req.Argv) == 0:
		return errdefs.Malformed("a job needs cmd or argv")
	case req.Cmd != "" && len(req.Argv) > 0:
		return errdefs.Malformed("give cmd (with args) or argv, not both")
	case req.Workdir != "" && !strings.HasPrefix(req.Workdir, "/"):
		return errdefs.Malformed("workdir %q must be an absolute path", clip(req.Workdir))
	}
	if req.MaxRetries == nil {
		n := defaultMaxRetries
		req.MaxRetries = &n
	}
	if *req.MaxRetries < 0 || *req.MaxRetries > maxMaxRetries {
		return errdefs.Malformed("max_retries must be between 0 and %d, got %d", maxMaxRetries, *req.MaxRetries)
	}
	if req.Create == nil && creates {
		req.Create = &api.CreateRequest{Image: req.Image, Template: req.Template}
		req.Image, req.Template = "", ""
	}
	if req.SandboxID != "" {
		info, err := r.sb.Get(ctx, api.GetRequest{SandboxID: req.SandboxID})
		if err != nil {
			return err
		}
		if info.Stopped {
			return errdefs.New(errdefs.CodeStopped, "sandbox %s has stopped; a job needs a live one", info.SandboxID)
		}
		req.SandboxID = info.SandboxID
	}
	return nil
}

// Get describes one of the caller's jobs (sandbox::job::get).
func (r *Runner) Get(ctx context.Context, req api.JobRequest) (api.JobInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, err := r.lookupLocked(ctx, req.JobID)
	if err != nil {
		return api.JobInfo{}, err
	}
	return j.rec.Info, nil
}

// lookupLocked finds the caller's job id.
func (r *Runner) lookupLocked(ctx context.Context, id string) (*job, error) {
	j, ok := r.jobs[id]
	if !ok || j.rec.Owner != auth.OwnerFrom(ctx) {
		return nil, errdefs.New(errdefs.CodeNotFound, "no job %q", clip(id))
	}
	return j, nil
}

// List answers the caller's jobs, newest first (sandbox::job::list).
func (r *Runner) List(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error) {
	switch req.State {
	case "", api.JobQueued, api.JobRunning, api.JobSucceeded, api.JobFailed, api.JobDead, api.JobCancelled:
	default:
		return api.JobListResponse{}, errdefs.Malformed("state must be queued, running, succeeded, failed, dead or cancelled, got %q", clip(req.State))
	}
	if req.Limit < 0 || req.Limit > maxPage {
		return api.JobListResponse{}, errdefs.Malformed("limit must be between 0 (%d) and %d, got %d", maxPage, maxPage, req.Limit)
	}
	limit := req.Limit
	if limit == 0 {
		limit = maxPage
	}
	owner := auth.OwnerFrom(ctx)
	out := api.JobListResponse{Jobs: []api.JobInfo{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.order) - 1; i >= 0 && len(out.Jobs) < limit; i-- {
		info := r.order[i].rec.Info
		if r.order[i].rec.Owner == owner && (req.State == "" || info.State == req.State) && (req.SandboxID == "" || info.SandboxID == req.SandboxID) {
			out.Jobs = append(out.Jobs, info)
		}
	}
	return out, nil
}

// DeadLetters answers the caller's dead-letter list (sandbox::job::dlq).
func (r *Runner) DeadLetters(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error) {
	if req.State != "" && req.State != api.JobDead {
		return api.JobListResponse{}, errdefs.Malformed("the dead-letter list holds dead jobs only")
	}
	req.State = api.JobDead
	return r.List(ctx, req)
}

// Cancel cancels a queued job, or kills a running one's exec
// (sandbox::job::cancel). An ended job is S001.
func (r *Runner) Cancel(ctx context.Context, req api.JobRequest) (api.JobInfo, error) {
	r.mu.Lock()
	j, err := r.lookupLocked(ctx, req.JobID)
	if err != nil {
		r.mu.Unlock()
		return api.JobInfo{}, err
	}
	switch j.rec.Info.State {
	case api.JobRunning:
		j.cancelled = true
		j.cancel()
		r.mu.Unlock()
		// The attempt records the end; wait for it, bounded by the call.
		for {
			select {
			case <-ctx.Done():
				return r.Get(ctx, req)
			case <-time.After(20 * time.Millisecond):
			}
			if info, err := r.Get(ctx, req); err != nil || info.State != api.JobRunning {
				return info, err
			}
		}
	case api.JobQueued:
		r.endLocked(j, api.JobCancelled)
		info := j.rec.Info
		r.mu.Unlock()
		r.save(j)
		r.emit(j.rec, api.EventJobFinished, map[string]any{"job_id": info.JobID, "state": info.State})
		return info, nil
	default:
		state := j.rec.Info.State
		r.mu.Unlock()
		return api.JobInfo{}, errdefs.Malformed("job %s has ended (%s); only a queued or running job can be cancelled", req.JobID, state)
	}
}

// Retry queues a dead job again, its attempts counted anew
// (sandbox::job::retry).
func (r *Runner) Retry(ctx context.Context, req api.JobRequest) (api.JobInfo, error) {
	r.mu.Lock()
	j, err := r.lookupLocked(ctx, req.JobID)
	if err != nil {
		r.mu.Unlock()
		return api.JobInfo{}, err
	}
	if j.rec.Info.State != api.JobDead {
		state := j.rec.Info.State
		r.mu.Unlock()
		return api.JobInfo{}, errdefs.Malformed("job %s is %s; only a dead job (in the dead-letter list) can be retried", req.JobID, state)
	}
	// It goes to the end of the queue.
	seq, err := r.store.nextSeq()
	if err != nil {
		r.mu.Unlock()
		return api.JobInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "queueing a job")
	}
	old := j.rec.Seq
	j.rec.Seq = seq
	j.rec.NotBefore = time.Time{}
	j.rec.Info.State, j.rec.Info.Attempts, j.rec.Info.EndedAt, j.rec.Info.NextAttemptAt = api.JobQueued, 0, "", ""
	if j.rec.Info.Request.Create != nil {
		j.rec.Info.SandboxID = ""
	}
	r.order = removeJob(r.order, j)
	r.order = append(r.order, j)
	info := j.rec.Info
	r.mu.Unlock()
	if err := r.store.remove([]uint64{old}); err != nil {
		r.log.Warn("removing a retried job's old record", "job", info.JobID, "err", err)
	}
	r.save(j)
	r.emit(j.rec, api.EventJobQueued, map[string]any{"job_id": info.JobID, "retried": true})
	r.poke()
	return info, nil
}

func removeJob(order []*job, j *job) []*job {
	for i, o := range order {
		if o == j {
			return append(order[:i:i], order[i+1:]...)
		}
	}
	return order
}

// schedule starts the queued jobs that may run, whenever something
// changes or a retry's wait ends, until Close.
func (r *Runner) schedule() {
	defer r.running.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := r.startReady(time.Now())
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
	}
}

// startReady starts the queued jobs that may run now. A job for a
// sandbox waits while an earlier job for it is running or waiting; an
// owner's jobs start in submission order, at most MaxRunningPerOwner at
// once; and each free slot goes to the owner with the fewest jobs
// running, then to the one who started a job least recently
// (round-robin), then to the oldest job. It returns when the next
// waiting job may run (zero: none).
func (r *Runner) startReady(now time.Time) (next time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return time.Time{}
	}
	busy := map[string]bool{}    // sandboxes with an earlier job pending
	ready := map[string][]*job{} // by owner, in submission order
	running := map[string]int{}  // by owner
	pending := map[string]bool{} // owners with jobs queued or running
	for _, j := range r.order {
		info := &j.rec.Info
		target := info.Request.SandboxID
		if info.State == api.JobRunning {
			running[j.rec.Owner]++
			pending[j.rec.Owner] = true
			if target != "" {
				busy[target] = true
			}
		}
		if info.State != api.JobQueued || (target != "" && busy[target]) {
			continue
		}
		pending[j.rec.Owner] = true
		if target != "" {
			busy[target] = true
		}
		if j.rec.NotBefore.After(now) {
			if next.IsZero() || j.rec.NotBefore.Before(next) {
				next = j.rec.NotBefore
			}
			continue
		}
		ready[j.rec.Owner] = append(ready[j.rec.Owner], j)
	}
	for owner := range r.lastStart {
		if !pending[owner] {
			delete(r.lastStart, owner) // back with no turn owed
		}
	}
	for r.active < r.opts.MaxRunning {
		pick, found := "", false // "" is an owner too: the one without tokens
		for owner, js := range ready {
			if len(js) == 0 || running[owner] >= r.opts.MaxRunningPerOwner {
				continue
			}
			if !found || r.goesFirstLocked(owner, pick, running, ready) {
				pick, found = owner, true
			}
		}
		if !found {
			break
		}
		j := ready[pick][0]
		ready[pick] = ready[pick][1:]
		running[pick]++
		r.startLocked(j, now)
	}
	return next
}

// goesFirstLocked reports whether owner a's next ready job goes before
// owner b's: fewer running, then a turn longer ago, then an older job.
func (r *Runner) goesFirstLocked(a, b string, running map[string]int, ready map[string][]*job) bool {
	if running[a] != running[b] {
		return running[a] < running[b]
	}
	if r.lastStart[a] != r.lastStart[b] {
		return r.lastStart[a] < r.lastStart[b]
	}
	return ready[a][0].rec.Seq < ready[b][0].rec.Seq
}

// startLocked starts an attempt of j.
func (r *Runner) startLocked(j *job, now time.Time) {
	ctx, cancel := context.WithCancel(auth.WithOwner(r.ctx, j.rec.Owner))
	j.cancel, j.cancelled = cancel, false
	info := &j.rec.Info
	info.State, info.StartedAt, info.NextAttemptAt, info.Error = api.JobRunning, stamp(now), "", nil
	info.Attempts++
	r.active++
	r.starts++
	r.lastStart[j.rec.Owner] = r.starts
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		defer cancel()
		r.save(j)
		r.emit(j.rec, api.EventJobStarted, map[string]any{"job_id": info.JobID, "attempt": info.Attempts})
		res, sandboxID, err := r.attempt(ctx, j)
		r.finish(j, res, sandboxID, err)
		r.poke()
	}()
}

// attempt runs j once: in its sandbox, or in one created for it and
// stopped after.
func (r *Runner) attempt(ctx context.Context, j *job) (*api.ExecResponse, string, error) {
	r.mu.Lock()
	req := j.rec.Info.Request
	r.mu.Unlock()
	id := req.SandboxID
	if req.Create != nil {
		created, err := r.sb.Create(ctx, *req.Create)
		if err != nil {
			return nil, "", err
		}
		id = created.SandboxID
		failpoint.Hit("job.after-create")
		r.mu.Lock()
		j.rec.Info.SandboxID = id
		r.mu.Unlock()
		defer func() {
			stopCtx, cancel := context.WithTimeout(auth.WithOwner(context.Background(), j.rec.Owner), time.Minute)
			defer cancel()
			if _, err := r.sb.Stop(stopCtx, api.StopRequest{SandboxID: id}); err != nil && !errdefs.Is(err, errdefs.CodeStopped) && !errdefs.Is(err, errdefs.CodeNotFound) {
				r.log.Warn("stopping a job's sandbox", "job", j.rec.Info.JobID, "sandbox", id, "err", err)
			}
		}()
	}
	res, err := r.sb.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: req.Cmd, Args: req.Args, Argv: req.Argv, Env: req.Env,
		Workdir: req.Workdir, TimeoutMs: req.TimeoutMs})
	if err != nil {
		return nil, id, err
	}
	res.Stdout, res.StdoutTruncated = capOutput(res.Stdout, res.StdoutTruncated)
	res.Stderr, res.StderrTruncated = capOutput(res.Stderr, res.StderrTruncated)
	return &res, id, nil
}

// capOutput keeps the last maxOutput bytes of s.
func capOutput(s string, truncated bool) (string, bool) {
	if len(s) <= maxOutput {
		return s, truncated
	}
	return strings.ToValidUTF8(s[len(s)-maxOutput:], ""), true
}

// finish records the end of an attempt: the job's end, or its retry.
func (r *Runner) finish(j *job, res *api.ExecResponse, sandboxID string, err error) {
	now := time.Now().UTC()
	r.mu.Lock()
	r.active--
	info := &j.rec.Info
	req := info.Request
	info.Result = res
	if sandboxID != "" {
		info.SandboxID = sandboxID
	}
	var retry bool
	var state string
	switch {
	case j.cancelled:
		state = api.JobCancelled
	case r.closed && err != nil:
		// The daemon is stopping: the attempt runs again at the next
		// start, not counted.
		info.State = api.JobQueued
		info.Attempts--
		r.mu.Unlock()
		r.save(j)
		return
	case err != nil:
		env := envelope.From(err)
		info.Error = &env
		retry = !permanent(err, req)
		state = api.JobDead
	case res.ExitCode != nil && *res.ExitCode == 0:
		state = api.JobSucceeded
	case req.RetryOnExit:
		retry, state = true, api.JobDead
	default:
		state = api.JobFailed
	}
	if retry && info.Attempts <= *req.MaxRetries {
		wait := r.opts.Backoff(info.Attempts)
		j.rec.NotBefore = now.Add(wait)
		info.State, info.NextAttemptAt = api.JobQueued, stamp(j.rec.NotBefore)
		rec := *j.rec
		r.mu.Unlock()
		r.save(j)
		r.log.Info("job attempt failed; retrying", "job", info.JobID, "attempt", rec.Info.Attempts, "in", wait, "err", err)
		r.emit(&rec, api.EventJobRetrying, map[string]any{"job_id": rec.Info.JobID, "attempt": rec.Info.Attempts, "error": errorText(rec.Info), "next_attempt_at": rec.Info.NextAttemptAt})
		return
	}
	r.endLocked(j, state)
	rec := *j.rec
	r.mu.Unlock()
	r.save(j)
	data := map[string]any{"job_id": rec.Info.JobID, "state": state, "attempts": rec.Info.Attempts}
	if res != nil {
		data["exit_code"], data["timed_out"] = res.ExitCode, res.TimedOut
	}
	if rec.Info.Error != nil {
		data["error"] = errorText(rec.Info)
	}
	r.emit(&rec, api.EventJobFinished, data)
}

// errorText is a job's last error as one line, "" without one.
func errorText(info api.JobInfo) string {
	if info.Error == nil {
		return ""
	}
	return info.Error.Code + ": " + info.Error.Message
}

// permanent reports whether err will fail every attempt of a job made as
// req: a request the daemon refuses, or a sandbox of the caller's that is
// gone.
func permanent(err error, req api.JobSubmitRequest) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	code := errdefs.CodeOf(err)
	switch code.Kind() {
	case errdefs.KindInvalid, errdefs.KindNotFound, errdefs.KindForbidden, errdefs.KindPrecondition:
		return true
	}
	return req.SandboxID != "" && code == errdefs.CodeStopped
}

// endLocked ends j in state and keeps the store within MaxKept.
func (r *Runner) endLocked(j *job, state string) {
	j.rec.Info.State, j.rec.Info.EndedAt, j.rec.Info.NextAttemptAt = state, stamp(time.Now()), ""
	var ended []*job
	for _, o := range r.order {
		if s := o.rec.Info.State; s != api.JobQueued && s != api.JobRunning {
			ended = append(ended, o)
		}
	}
	extra := len(r.order) - r.opts.MaxKept
	var gone []uint64
	for _, o := range ended {
		if extra <= 0 {
			break
		}
		delete(r.jobs, o.rec.Info.JobID)
		r.order = removeJob(r.order, o)
		gone = append(gone, o.rec.Seq)
		extra--
	}
	if len(gone) > 0 {
		if err := r.store.remove(gone); err != nil {
			r.log.Warn("forgetting old jobs", "err", err)
		}
	}
}

// save writes j's record.
func (r *Runner) save(j *job) {
	r.mu.Lock()
	rec := *j.rec
	r.mu.Unlock()
	if err := r.store.put(&rec); err != nil {
		r.log.Error("recording a job", "job", rec.Info.JobID, "err", err)
	}
}

// emit records a job event.
func (r *Runner) emit(rec *record, typ string, data map[string]any) {
	if r.opts.Events == nil {
		return
	}
	b, err := api.Marshal(data)
	if err != nil {
		r.log.Error("encoding a job event", "err", err)
		return
	}
	r.opts.Events.Append(events.Event{Type: typ, Owner: rec.Owner, SandboxID: rec.Info.SandboxID, Data: b})
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
