package bench

// Runtime scenarios: the same measurement in each isolation runtime the
// daemon offers (gVisor, the QEMU microVM), one after another in one run,
// on the same image and the same sandbox shape, each compared with the
// first runtime's (VsRuntime). A create names its runtime
// (api.CreateRequest.Runtime); the warm pool serves only the default
// runtime, so every create here asks for a shape no pool holds and boots.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
)

const (
	// runtimeIdleSandboxes caps the sandboxes of runtime-idle-memory held
	// at once: a microVM holds hundreds of MiB.
	runtimeIdleSandboxes = 10
	// runtimeIdleSettle is how long they sit idle before they are
	// measured: a microVM's guest gives freed pages back (free page
	// reporting) over seconds after its boot.
	runtimeIdleSettle = 10 * time.Second
)

// RuntimeRef is the runtime a result was measured in, and how it
// isolates on the daemon's host (/healthz's mode: gVisor's platform, the
// microVM's accelerator, kvm or tcg).
type RuntimeRef struct {
	Name string `json:"name"`
	Mode string `json:"mode,omitempty"`
}

// String is "microvm (tcg)".
func (r RuntimeRef) String() string {
	if r.Mode == "" {
		return r.Name
	}
	return r.Name + " (" + r.Mode + ")"
}

// RuntimeRatio compares a result with the same measurement in the run's
// first runtime: this one's p50 and p99 over that one's (below 1, this
// runtime does better).
type RuntimeRatio struct {
	Of  string  `json:"runtime"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// runtimeChoice is a runtime the runtime scenarios measure in.
type runtimeChoice struct {
	RuntimeRef
	// create is api.CreateRequest.Runtime: "" for the daemon's default
	// when the daemon does not list its runtimes.
	create string
	// skip says why the daemon cannot create sandboxes in it.
	skip string
}

// defaultRuntimeName labels the daemon's default runtime when /healthz
// does not name it.
const defaultRuntimeName = "default"

// runtimeChoices resolves Options.Runtimes against the runtimes the
// daemon lists on /healthz (once per run): each named runtime, skipped
// with the reason when the daemon lacks it or its host cannot run it; no
// names means the daemon's default runtime.
func (e *env) runtimeChoices(ctx context.Context) ([]runtimeChoice, error) {
	if e.runtimes != nil {
		return e.runtimes, nil
	}
	infos, err := e.c.Runtimes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's runtimes (/healthz): %w", err)
	}
	e.runtimes = chooseRuntimes(e.opts.Runtimes, infos)
	e.runtimeInfos = infos
	return e.runtimes, nil
}

// chooseRuntimes is runtimeChoices for the runtimes named and those the
// daemon lists.
func chooseRuntimes(names []string, infos []api.RuntimeInfo) []runtimeChoice {
	if len(names) == 0 {
		i := slices.IndexFunc(infos, func(in api.RuntimeInfo) bool { return in.Default })
		if i < 0 {
			return []runtimeChoice{{RuntimeRef: RuntimeRef{Name: defaultRuntimeName}}}
		}
		names = []string{infos[i].Name}
	}
	var offered []string
	for _, in := range infos {
		offered = append(offered, in.Name)
	}
	out := make([]runtimeChoice, 0, len(names))
	for _, name := range names {
		rc := runtimeChoice{RuntimeRef: RuntimeRef{Name: name}, create: name}
		i := slices.IndexFunc(infos, func(in api.RuntimeInfo) bool { return in.Name == name })
		switch {
		case i < 0 && len(infos) == 0:
			rc.skip = fmt.Sprintf("the daemon does not list its runtimes on /healthz (a daemon without runtime-per-create); cannot create %s sandboxes", name)
		case i < 0:
			rc.skip = fmt.Sprintf("the daemon does not offer runtime %s (it offers %s)", name, strings.Join(offered, ", "))
		case !infos[i].Available:
			rc.Mode = infos[i].Mode
			rc.skip = fmt.Sprintf("runtime %s is not available on the daemon's host: %s", name, infos[i].Unavailable)
		default:
			rc.Mode = infos[i].Mode
		}
		out = append(out, rc)
	}
	return out
}

// eachRuntime runs scenario s in every runtime of the run, one after
// another; a runtime the daemon lacks gives a skipped result. Only the end
// of ctx is an error.
func (e *env) eachRuntime(ctx context.Context, s Scenario) ([]Result, error) {
	rts, err := e.runtimeChoices(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []Result{outcome(s.Name, s.Title, Result{}, err)}, nil
	}
	out := make([]Result, 0, len(rts))
	for _, rt := range rts {
		e.progress("bench: %s, %s…", s.Title, rt)
		var res Result
		err := skipf("%s", rt.skip)
		if rt.skip == "" {
			res, err = e.prepareRuntime(ctx, rt)
			if err == nil {
				res, err = s.inRuntime(ctx, e, rt)
			}
		}
		if serr := e.stops.drain(); err == nil {
			err = serr
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		res = outcome(s.Name+"/"+rt.Name, s.Title, res, err)
		ref := rt.RuntimeRef
		res.Runtime = &ref
		out = append(out, res)
	}
	return out, nil
}

// prepareRuntime makes, once per run and runtime, a first sandbox of the
// image in it and runs true in it, off the clock: the microVM runtime's
// first create of an image builds the image's disk.
func (e *env) prepareRuntime(ctx context.Context, rt runtimeChoice) (Result, error) {
	if err, done := e.prepared[rt.Name]; done {
		return Result{}, err
	}
	e.progress("bench:   a first %s sandbox, off the clock…", rt.Name)
	req, _, err := e.runtimeRequest(ctx, rt)
	if err == nil {
		var id string
		_, id, err = createThenExec(ctx, e.c, req)
		if id != "" {
			e.stops.stop(ctx, id)
		}
	}
	if err != nil {
		err = fmt.Errorf("the first %s sandbox: %w", rt.Name, err)
	}
	if e.prepared == nil {
		e.prepared = map[string]error{}
	}
	e.prepared[rt.Name] = err
	return Result{}, err
}

// runtimeRequest is the create of the runtime scenarios in runtime rt:
// the benchmark's image, in a shape the warm pool does not hold (on a
// daemon with one), the same in every runtime.
func (e *env) runtimeRequest(ctx context.Context, rt runtimeChoice) (api.CreateRequest, string, error) {
	req, note, err := e.createRequest(ctx, true)
	req.Runtime = rt.create
	return req, note, err
}

// runtimeReady times creates in runtime rt, each booting a sandbox, until
// its first exec of true answered.
func runtimeReady(ctx context.Context, e *env, rt runtimeChoice) (Result, error) {
	req, note, err := e.runtimeRequest(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		d, id, err := createThenExec(ctx, e.c, req)
		if id != "" {
			defer e.stops.stop(ctx, id)
		}
		return d, err
	})
	res := latencyResult(samples)
	res.Note = note
	return res, err
}

// runtimeExecTrue times execs of true over HTTP in one sandbox of runtime
// rt.
func runtimeExecTrue(ctx context.Context, e *env, rt runtimeChoice) (Result, error) {
	req, _, err := e.runtimeRequest(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	var samples []time.Duration
	err = e.withSandboxOf(ctx, req, func(id string) error {
		var err error
		samples, err = e.timeExecs(ctx, httpExec, id, "true")
		return err
	})
	return latencyResult(samples), err
}

// runtimeIdleMemory creates up to runtimeIdleSandboxes sandboxes of
// runtime rt, runs true in each, lets them idle together and measures the
// PSS of each one's host processes: the same measure in every runtime
// (gVisor's runsc sandbox, gofer and systrap stubs; the microVM's QEMU
// process, guest memory and emulation included). The daemon's own figure
// (sandbox::metrics) differs by runtime and is in the note only.
func runtimeIdleMemory(ctx context.Context, e *env, rt runtimeChoice) (Result, error) {
	if err := e.checkLocal(); err != nil {
		return Result{}, err
	}
	req, _, err := e.runtimeRequest(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	ids, err := e.createIdle(ctx, min(e.opts.Runs, runtimeIdleSandboxes), func() (string, error) { return e.createWith(ctx, req) })
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	res, err := idlePSS(ids, "sandbox", runtimeIdleSettle)
	if err != nil {
		return Result{}, err
	}
	res.Note = fmt.Sprintf("%d sandboxes idle together, %s after one exec each; PSS of all host processes of each", len(ids), runtimeIdleSettle)
	if reported, ok := e.reportedMemory(ctx, ids); ok {
		res.Note += fmt.Sprintf("; the daemon's own figure (sandbox::metrics memory_bytes: gVisor's cgroup working set, a microVM's QEMU resident set) p50 %s MiB", fmtMiB(reported.P50))
	}
	return res, nil
}

// reportedMemory summarises what the daemon says sandboxes ids use
// (sandbox::metrics); ok is false when it cannot say for every one.
func (e *env) reportedMemory(ctx context.Context, ids []string) (Sizes, bool) {
	var sizes []uint64
	for _, id := range ids {
		m, err := e.c.Metrics(ctx, id)
		if err != nil || m.MemoryBytes == 0 {
			return Sizes{}, false
		}
		sizes = append(sizes, m.MemoryBytes)
	}
	return SummarizeSizes(sizes), len(sizes) > 0
}

// compareRuntimes sets VsRuntime on every result of a runtime scenario
// measured in another runtime than the run's first, from the first's
// result of the same scenario.
func (r *Report) compareRuntimes() {
	first := map[string]*Result{}
	for i := range r.Results {
		res := &r.Results[i]
		if res.Runtime == nil {
			continue
		}
		base, _, _ := strings.Cut(res.Name, "/")
		ref, seen := first[base]
		if !seen {
			first[base] = res
			continue
		}
		if ref.kind() == "" || res.kind() == "" {
			continue
		}
		if v := runtimeRatio(*res, *ref); v != nil {
			v.Of = ref.Runtime.Name
			res.VsRuntime = v
		}
	}
}

// runtimeRatio is res's p50 and p99 over ref's, or nil when they do not
// compare.
func runtimeRatio(res, ref Result) *RuntimeRatio {
	switch {
	case res.Latency != nil && ref.Latency != nil && ref.Latency.P50 > 0 && ref.Latency.P99 > 0:
		return &RuntimeRatio{P50: float64(res.Latency.P50) / float64(ref.Latency.P50), P99: float64(res.Latency.P99) / float64(ref.Latency.P99)}
	case res.Memory != nil && ref.Memory != nil && ref.Memory.P50 > 0 && ref.Memory.P99 > 0:
		return &RuntimeRatio{P50: float64(res.Memory.P50) / float64(ref.Memory.P50), P99: float64(res.Memory.P99) / float64(ref.Memory.P99)}
	}
	return nil
}
