package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// Scenario names, the keys of --scenarios.
const (
	NameCreateExec     = "create-exec"
	NamePoolCreateExec = "pool-create-exec"
	NameCreate         = "create"
	NameExecTrue       = "exec-true"
	NameExecTrueWS     = "exec-true-ws"
	NameExecPython     = "exec-python"
	NameExecPythonWS   = "exec-python-ws"
	NameSpawnFloor     = "spawn-floor"
	NameExecThroughput = "exec-throughput"
	NameFsSmall        = "fs-1mib"
	NameFsStream       = "fs-stream"
	NameIdleMemory     = "idle-memory"
	NameIdleCapacity   = "idle-capacity"
	NameStreamLatency  = "stream-latency"
	NamePtyEcho        = "pty-echo"
	NameStreamRate     = "stream-throughput"
	NameProcessList    = "process-list"
	NamePauseResume    = "pause-resume"
	NameSnapshot       = "snapshot"
	NameRestoreExec    = "restore-exec"
	NameForkExec       = "fork-exec"
	NameHibernated     = "hibernated-memory"
	NameEvents         = "events-overhead"
	NameInterpCell     = "interp-cell"
	NameContextCreate  = "context-create"
	NamePreview        = "preview-request"
	NamePreviewRate    = "preview-throughput"
	NameCreateBurst    = "create-burst"
	NameCreateSteady   = "create-steady"
	NameE2BExecTrue    = "e2b-exec-true"
	NameE2BCreate      = "e2b-create"
	NameE2BForkExec    = "e2b-fork-exec" // issue 40
	NameCreateMixed    = "create-mixed"  // issue 46: 3
	NameFsSmallRaw     = "fs-1mib-raw"   // issue 46: 5
	// The runtime scenarios measure in each runtime of Options.Runtimes;
	// their results are named <scenario>/<runtime>.
	NameRuntimeReady  = "runtime-ready"
	NameRuntimeExec   = "runtime-exec-true"
	NameRuntimeMemory = "runtime-idle-memory"
)

// Scenario is one measurement, with the same measurement made by other
// tools when they are on the host.
type Scenario struct {
	// Name selects the scenario (--scenarios).
	Name string
	// Title labels it in reports.
	Title string
	// run measures; it returns a Result with Latency, Throughput, Memory
	// or Capacity set, or a skipError when the scenario cannot run here.
	// Sandboxes it creates are handed to e.stops.
	run func(ctx context.Context, e *env) (Result, error)
	// inRuntime, instead of run, measures in one runtime; the scenario
	// runs once in each runtime of the run (runtimes.go).
	inRuntime func(ctx context.Context, e *env, rt runtimeChoice) (Result, error)
	// baselines measure the same thing another way (baselines.go).
	baselines []baseline
	// dockerOf names the scenario whose Docker baseline this one is
	// compared with when it has none of its own.
	dockerOf string
	// poolDaemon: it measures the warm pool with its default settings, on
	// Options.PoolDaemon when set.
	poolDaemon bool
}

// Scenarios is every scenario, in report order. Adding a measurement is
// adding an entry.
var Scenarios = []Scenario{
	{Name: NameCreateExec, Title: "create→first exec (cold)", run: coldCreate(true),
		baselines: []baseline{dockerCreate(true), runscDo}},
	{Name: NamePoolCreateExec, Title: "create→first exec (warm pool)", run: poolCreateFirstExec, dockerOf: NameCreateExec, poolDaemon: true},
	{Name: NameCreate, Title: "create (agent ready)", run: coldCreate(false), baselines: []baseline{dockerCreate(false)}},
	{Name: NameCreateBurst, Title: "creates at once → every first exec", run: createBurst, poolDaemon: true},
	{Name: NameCreateSteady, Title: "steady creates → first exec", run: createSteady, poolDaemon: true},
	{Name: NameCreateMixed, Title: "steady creates of mixed shapes and images → first exec", run: createMixed, poolDaemon: true}, // issue 46: 3
	{Name: NameE2BCreate, Title: "E2B Sandbox.create (warm pool)", run: e2bCreate, poolDaemon: true},
	{Name: NameExecTrue, Title: "exec true (HTTP)", run: execLatency(httpExec, "true"), baselines: []baseline{dockerExec("true")}},
	// Right after exec true, which it is compared with, on a machine in the
	// same state.
	{Name: NameSpawnFloor, Title: "spawn floor (posix_spawn in sandbox)", run: spawnFloor, baselines: []baseline{dockerSpawnFloor}},
	{Name: NameExecTrueWS, Title: "exec true (engine WebSocket)", run: execLatency(wsExec, "true"), dockerOf: NameExecTrue},
	{Name: NameExecPython, Title: "exec python3 -c pass (HTTP)", run: execLatency(httpExec, "python3", "-c", "pass"),
		baselines: []baseline{dockerExec("python3", "-c", "pass")}},
	{Name: NameExecPythonWS, Title: "exec python3 -c pass (engine WebSocket)", run: execLatency(wsExec, "python3", "-c", "pass"), dockerOf: NameExecPython},
	{Name: NameE2BExecTrue, Title: "E2B commands.run('true') (envd, Connect JSON)", run: e2bExecTrue},
	{Name: NameExecThroughput, Title: "exec throughput", run: execThroughput, baselines: []baseline{dockerThroughput}},
	{Name: NameEvents, Title: "exec throughput, SSE subscriber and webhook attached", run: eventsOverhead},
	{Name: NameFsSmall, Title: "fs write+read 1 MiB (sandbox::fs::write/read)", run: fsSmall, baselines: []baseline{dockerFsSmall}},
	{Name: NameFsSmallRaw, Title: "fs write+read 1 MiB (PUT/GET files, raw bytes)", run: fsSmallRaw, dockerOf: NameFsSmall}, // issue 46: 5
	{Name: NameFsStream, Title: "streamed upload+download (PUT/GET files)", run: fsStream, baselines: []baseline{dockerFsStream}},
	{Name: NameStreamLatency, Title: "streamed exec: line written → client (HTTP)", run: streamLatency},
	{Name: NamePtyEcho, Title: "PTY echo round trip through cat (WebSocket)", run: ptyEcho},
	{Name: NameStreamRate, Title: "streamed exec output", run: streamThroughput},
	{Name: NameProcessList, Title: "process list, 10 sandboxes × 10 processes", run: processList},
	{Name: NameInterpCell, Title: "interpreter cell `1 + 1` in a warm Python context", run: interpCell},
	{Name: NameContextCreate, Title: "Python context create → first cell answered", run: contextCreate},
	{Name: NamePreview, Title: "small GET through a preview URL", run: previewRequest},
	{Name: NamePreviewRate, Title: "large answer through a preview URL", run: previewThroughput},
	{Name: NameVolumeWrite, Title: "256 MiB written with fsync: volume vs writable root", run: volumeWrite},
	{Name: NamePauseResume, Title: "freeze + resume (pause, resume)", run: pauseResume},
	{Name: NameSnapshot, Title: "snapshot of an idle sandbox", run: snapshotLatency},
	{Name: NameRestoreExec, Title: "restore from a snapshot → first exec", run: restoreExec},
	{Name: NameForkExec, Title: "fork ×10 → every first exec", run: forkExec},
	{Name: NameE2BForkExec, Title: "E2B sandbox.fork() → commands.run('true') in the copy", run: e2bForkExec}, // issue 40
	{Name: NameHibernated, Title: "host memory per hibernated sandbox (PSS)", run: hibernatedMemory},
	{Name: NameIdleMemory, Title: "host memory per idle sandbox (PSS)", run: idleMemory, baselines: []baseline{dockerIdleMemory}},
	{Name: NameIdleCapacity, Title: "idle sandboxes held (creates under 1 s)", run: idleCapacity},
	// issue 37: the egress proxy, on a daemon of its own (egress.go).
	{Name: NameEgressHTTPS, Title: "HTTPS request through the egress proxy, by SNI (new connection each)", run: egressHTTPS},
	{Name: NameEgressDownload, Title: "download through the egress proxy, by Host", run: egressDownload},
	// issue 39: templates (templates.go).
	{Name: NameTemplateRebuild, Title: "rebuild of an unchanged 10-step Dockerfile", run: templateRebuild},
	{Name: NameTemplateHTTP, Title: "create from a template with a running server → first 200 (preview URL)", run: templateCreateHTTP},
	{Name: NameTemplateDisk, Title: "disk per more sandbox of a template", run: templateDisk},
	{Name: NameRuntimeReady, Title: "create→first exec (cold)", inRuntime: runtimeReady},
	{Name: NameRuntimeExec, Title: "exec true (HTTP)", inRuntime: runtimeExecTrue},
	{Name: NameRuntimeMemory, Title: "host memory per idle sandbox (PSS)", inRuntime: runtimeIdleMemory},
}

const (
	// maxPendingStops bounds the sandboxes stopped without waiting whose
	// teardown is still under way, so that they never pile up against the
	// daemon's max_concurrent_sandboxes (32 by default).
	maxPendingStops = 4
	// execTimeout bounds every exec of the benchmark.
	execTimeout = 60 * time.Second
	// stopTimeout bounds a stop, which runs even after ctx ended.
	stopTimeout = 60 * time.Second
	// sandboxName labels the benchmark's sandboxes in `hutch list`.
	sandboxName = "hutch-bench"
)

// env is what scenarios run with.
type env struct {
	c     *client.Client
	opts  Options
	stops *stopper
	// ws is the engine WebSocket session, opened by the first scenario
	// that needs it (engine.go).
	ws *wsSession
	// pool is what the daemon's /metrics says of its warm pool of the
	// benchmark's image (pool.go), read at the start of the run.
	pool poolInfo
	// defaults are the limits a create without any gets, learnt from the
	// first sandbox created (cold.go).
	defaults *api.SandboxInfo
	// docker is the Docker baseline's state (baselines.go).
	docker dockerEnv
	// runtimes are the runtimes the runtime scenarios measure in, and
	// runtimeInfos what the daemon said of its runtimes, read by the first
	// of them; prepared holds, per runtime, the outcome of its first
	// sandbox (runtimes.go).
	runtimes     []runtimeChoice
	runtimeInfos []api.RuntimeInfo
	prepared     map[string]error
}

// skipError is a scenario or baseline that cannot run here, and why.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// skipf returns a skipError.
func skipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// create creates a sandbox of the benchmark's image with the daemon's
// default limits (a warm pool may serve it).
func (e *env) create(ctx context.Context) (string, error) {
	return e.createWith(ctx, api.CreateRequest{Image: e.opts.Image, Name: sandboxName})
}

// createWith creates a sandbox as req asks.
func (e *env) createWith(ctx context.Context, req api.CreateRequest) (string, error) {
	sb, err := e.c.Create(ctx, req)
	if err != nil {
		return "", fmt.Errorf("creating a %s sandbox: %w", req.Image, err)
	}
	return sb.SandboxID, nil
}

// exec runs argv in sandbox id and fails unless it exits 0.
func (e *env) exec(ctx context.Context, id string, argv ...string) (api.ExecResponse, error) {
	res, err := e.c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: argv, TimeoutMs: uint64(execTimeout.Milliseconds())})
	if err != nil {
		return res, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return res, checkExit(argv[0], res)
}

// repeat calls run Warmup times, then Runs times, and returns the
// durations of the latter. run returns the duration of its timed part.
func (e *env) repeat(ctx context.Context, run func(context.Context) (time.Duration, error)) ([]time.Duration, error) {
	samples := make([]time.Duration, 0, e.opts.Runs)
	for i := range e.opts.Warmup + e.opts.Runs {
		d, err := run(ctx)
		if err != nil {
			return nil, err
		}
		if i >= e.opts.Warmup {
			samples = append(samples, d)
		}
	}
	return samples, nil
}

// withSandbox runs fn with one sandbox created for it (off the clock).
func (e *env) withSandbox(ctx context.Context, fn func(id string) error) error {
	return e.withSandboxOf(ctx, api.CreateRequest{Image: e.opts.Image, Name: sandboxName}, fn)
}

// withSandboxOf is withSandbox with a sandbox created as req asks.
func (e *env) withSandboxOf(ctx context.Context, req api.CreateRequest, fn func(id string) error) error {
	id, err := e.createWith(ctx, req)
	if err != nil {
		return err
	}
	defer e.stops.stop(ctx, id)
	return fn(id)
}

// createSandboxes creates n sandboxes, running after in each, and
// returns their ids, also when it fails midway: the caller stops them
// (stopSandboxes).
func (e *env) createSandboxes(ctx context.Context, n int, after func(id string) error) ([]string, error) {
	return makeN(n, func() (string, error) { return e.create(ctx) }, after)
}

// makeN calls newID n times, then after with each id, and returns the ids
// made, also when it fails midway.
func makeN(n int, newID func() (string, error), after func(id string) error) ([]string, error) {
	var ids []string
	for range n {
		id, err := newID()
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		if after != nil {
			if err := after(id); err != nil {
				return ids, err
			}
		}
	}
	return ids, nil
}

// stopSandboxes stops sandboxes (e.stops follows their teardown).
func (e *env) stopSandboxes(ctx context.Context, ids []string) {
	for _, id := range ids {
		e.stops.stop(ctx, id)
	}
}

func latencyResult(samples []time.Duration) Result {
	s := Summarize(samples)
	return Result{Latency: &s}
}

// coldCreate times creates that boot a sandbox each, until the agent
// answered, and with firstExec until the first exec of true answered too.
// On a daemon with a warm pool, the creates ask for a shape the pool does
// not hold (createRequest).
func coldCreate(firstExec bool) func(context.Context, *env) (Result, error) {
	return func(ctx context.Context, e *env) (Result, error) {
		req, note, err := e.createRequest(ctx, true)
		if err != nil {
			return Result{}, err
		}
		samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			id, err := e.createWith(ctx, req)
			if err != nil {
				return 0, err
			}
			defer e.stops.stop(ctx, id)
			if firstExec {
				if _, err := e.exec(ctx, id, "true"); err != nil {
					return 0, err
				}
			}
			return time.Since(start), nil
		})
		res := latencyResult(samples)
		res.Note = note
		return res, err
	}
}

// execVia runs argv in sandbox id through one transport and fails unless
// it exits 0.
type execVia func(ctx context.Context, e *env, id string, argv ...string) error

// httpExec is execVia for the REST API.
func httpExec(ctx context.Context, e *env, id string, argv ...string) error {
	_, err := e.exec(ctx, id, argv...)
	return err
}

// execLatency times execs of argv through via in one long-lived sandbox.
func execLatency(via execVia, argv ...string) func(context.Context, *env) (Result, error) {
	return func(ctx context.Context, e *env) (Result, error) {
		var samples []time.Duration
		err := e.withSandbox(ctx, func(id string) error {
			var err error
			samples, err = e.timeExecs(ctx, via, id, argv...)
			return err
		})
		return latencyResult(samples), err
	}
}

// timeExecs times execs of argv through via in sandbox id (e.repeat).
func (e *env) timeExecs(ctx context.Context, via execVia, id string, argv ...string) ([]time.Duration, error) {
	// A transport that cannot be reached is found out before the
	// sandbox's first timed exec.
	if err := via(ctx, e, id, "true"); err != nil {
		return nil, err
	}
	return e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		if err := via(ctx, e, id, argv...); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	})
}

// spawnScript times posix_spawn + waitpid of /bin/true inside the
// sandbox: argv[1] timed runs after argv[2] warm-up ones, one duration in
// seconds per line.
const spawnScript = `import os, sys, time
runs, warmup = int(sys.argv[1]), int(sys.argv[2])
for i in range(warmup + runs):
    t0 = time.perf_counter()
    pid = os.posix_spawn('/bin/true', ['/bin/true'], os.environ)
    _, status = os.waitpid(pid, 0)
    t = time.perf_counter() - t0
    if status != 0:
        sys.exit('/bin/true ended with wait status %d' % status)
    if i >= warmup:
        print('%.9f' % t)
`

// spawnArgv runs spawnScript for runs timed and warmup untimed spawns.
func spawnArgv(runs, warmup int) []string {
	return []string{"python3", "-c", spawnScript, strconv.Itoa(runs), strconv.Itoa(warmup)}
}

// progress reports a step of the run, when Options.Progress is set.
func (e *env) progress(format string, args ...any) {
	if e.opts.Progress != nil {
		fmt.Fprintf(e.opts.Progress, format+"\n", args...)
	}
}

// floorRound is how many execs of true and floor samples make one round
// of the spawn floor scenario.
const floorRound = 3

// floorWarmup is how many untimed spawns each floor round's python makes
// first, so that the timed ones meet a warm process, as an agent's do.
const floorWarmup = 2

// spawnFloor measures what starting a process costs inside the sandbox
// itself: the floor under any exec round trip. It works in rounds, in one
// sandbox: floorRound execs of true over HTTP, timed, then one python
// that times floorRound spawns after floorWarmup untimed ones. Each round
// compares the two on a machine in the same state, however noisy it is
// from one round to the next; what hutch adds is the median over the rounds
// of the difference of their medians.
func spawnFloor(ctx context.Context, e *env) (Result, error) {
	var floor, execs, added []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		for range e.opts.Warmup {
			if _, err := e.exec(ctx, id, "true"); err != nil {
				return err
			}
		}
		for left := e.opts.Runs; left > 0; left -= floorRound {
			n := min(left, floorRound)
			var roundExecs []time.Duration
			for range n {
				start := time.Now()
				if _, err := e.exec(ctx, id, "true"); err != nil {
					return err
				}
				roundExecs = append(roundExecs, time.Since(start))
			}
			res, err := e.exec(ctx, id, spawnArgv(n, floorWarmup)...)
			if err != nil {
				return err
			}
			roundFloor, err := parseSeconds(res.Stdout, n)
			if err != nil {
				return err
			}
			floor, execs = append(floor, roundFloor...), append(execs, roundExecs...)
			added = append(added, Summarize(roundExecs).P50-Summarize(roundFloor).P50)
		}
		return nil
	})
	res := latencyResult(floor)
	if err == nil {
		res.Floor = &FloorPairs{Exec: Summarize(execs), Added: Summarize(added)}
	}
	return res, err
}

// parseSeconds reads want durations in seconds, one a line.
func parseSeconds(out string, want int) ([]time.Duration, error) {
	var ds []time.Duration
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		secs, err := strconv.ParseFloat(line, 64)
		if err != nil || secs < 0 {
			return nil, fmt.Errorf("reading spawn timings: %q is not a duration in seconds", clip(line, 40))
		}
		ds = append(ds, time.Duration(secs*float64(time.Second)))
	}
	if len(ds) != want {
		return nil, fmt.Errorf("reading spawn timings: got %d, want %d", len(ds), want)
	}
	return ds, nil
}

// execThroughput runs Callers concurrent loops of execs of true on each
// of Sandboxes sandboxes for Duration and counts the execs that finished.
func execThroughput(ctx context.Context, e *env) (Result, error) {
	ids, err := e.createSandboxes(ctx, e.opts.Sandboxes, nil)
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	res, err := throughput(ctx, e.opts, ids, func(ctx context.Context, id string) error {
		_, err := e.exec(ctx, id, "true")
		return err
	})
	if err == nil && e.checkLocal() != nil {
		// The processes that did the work are not on this machine.
		res.Throughput.CPU = nil
	}
	return res, err
}

// throughput runs o.Warmup untimed calls of run on each target, then
// o.Callers concurrent loops of run on each target for o.Duration, and
// counts the calls that finished and the host CPU time they cost. The
// first failure ends every loop.
func throughput(ctx context.Context, o Options, targets []string, run func(ctx context.Context, target string) error) (Result, error) {
	for _, t := range targets {
		for range o.Warmup {
			if err := run(ctx, t); err != nil {
				return Result{}, err
			}
		}
	}
	loopCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex // guards samples
		samples []time.Duration
	)
	cpuBefore := snapshotCPU()
	start := time.Now()
	end := start.Add(o.Duration)
	for _, t := range targets {
		for range o.Callers {
			wg.Go(func() {
				var mine []time.Duration
				for loopCtx.Err() == nil && time.Now().Before(end) {
					t0 := time.Now()
					if err := run(loopCtx, t); err != nil {
						cancel(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				samples = append(samples, mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter := snapshotCPU()
	if err := context.Cause(loopCtx); err != nil {
		return Result{}, err
	}
	return Result{Throughput: &Throughput{
		Sandboxes: len(targets),
		Callers:   o.Callers,
		Execs:     len(samples),
		Elapsed:   elapsed,
		PerSec:    float64(len(samples)) / elapsed.Seconds(),
		Latency:   Summarize(samples),
		CPU:       cpuPerExec(cpuBefore, cpuAfter, len(samples)),
	}}, nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
