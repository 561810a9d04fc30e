// Package bench measures a running hutch daemon from the client side: the
// latency of creating sandboxes (cold and from the warm pool) and of
// running commands in them through the HTTP API and the engine WebSocket,
// the cost of starting a process inside a sandbox (the floor an exec is
// compared with), exec throughput under concurrency, file transfers, and
// the host memory of idle sandboxes. Every measurement is a Scenario, one
// entry of the Scenarios table, with the same measurement made by Docker
// (through its Engine API) and by bare runsc as baselines in the same run
// when they are on the host. Run runs a selection of them and returns a
// Report, which renders itself as Markdown and JSON.
//
// Times are wall-clock times on the client (monotonic clock), so they
// include the HTTP round trip, the daemon and the agent.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/config"
)

// Options configure a benchmark run.
type Options struct {
	// Image is the catalog image of every sandbox ("python").
	Image string
	// Runs is the number of timed runs of each latency scenario.
	Runs int
	// Warmup is the number of untimed runs before them.
	Warmup int
	// Sandboxes and Callers shape the throughput scenario: Callers
	// concurrent callers on each of Sandboxes sandboxes, for Duration.
	Sandboxes int
	Callers   int
	Duration  time.Duration
	// RunscPath is the runsc binary whose version the report names and
	// that the runsc-do baseline runs; empty or missing leaves both out.
	RunscPath string
	// Token is the daemon's bearer token, for /metrics and the engine
	// WebSocket ("" without auth).
	Token string
	// EngineURL is the daemon's engine WebSocket (ws://127.0.0.1:49134);
	// "" skips the WebSocket scenarios.
	EngineURL string
	// DockerSocket is the Docker Engine's socket; "" or a missing socket
	// skips the Docker baselines.
	DockerSocket string
	// ImageCache is the daemon's image cache directory, where the Docker
	// baseline finds the root filesystem to import.
	ImageCache string
	// StreamBytes is the size of the streamed upload and download.
	StreamBytes int64
	// MaxIdle caps the sandboxes of the idle capacity scenario.
	MaxIdle int
	// Bursts are the sizes of create-burst's bursts of creates.
	Bursts []int
	// SteadyRate and SteadyDuration shape create-steady: creates per
	// second, for how long.
	SteadyRate     float64
	SteadyDuration time.Duration
	// issue 46: 3: MixedRate, MixedDuration and MixedImages shape
	// create-mixed: creates per second, for how long, of which images.
	MixedRate     float64
	MixedDuration time.Duration
	MixedImages   []string
	// PoolDaemon, when not nil, is a daemon with the default warm pool
	// settings (sized by demand), which the scenarios of the pool measure
	// (NeedsPoolDaemon); nil measures the one daemon.
	PoolDaemon *client.Client
	// E2BKey is the X-API-KEY of the E2B scenarios (E2B_API_KEY); ""
	// sends a key of the right form that only a daemon without api_tokens
	// and e2b.api_keys accepts. A key the daemon refuses skips them.
	E2BKey string
	// Runtimes are the isolation runtimes the runtime scenarios measure
	// in, each in turn, compared with the first ("gvisor", "microvm");
	// none means the daemon's default runtime alone.
	Runtimes []string
	// SlowCreate ends the idle capacity scenario once a create takes
	// longer; 0 means DefaultSlowCreate. Tests raise it: how fast a busy
	// machine creates is the benchmark's question, not theirs.
	SlowCreate time.Duration
	// DataDir is the daemon's data directory, on this host, whose growth
	// the template-disk scenario measures; "" skips it (issue 39).
	DataDir string
	// Progress, when not nil, receives one line per scenario as it starts.
	Progress io.Writer
	// ForkWide, when above 0, makes fork-exec time forks of this many
	// copies too, beside its forks of 10 (issue 46: fork ×100).
	ForkWide int
	// issue 37: Egress is the daemon and server of the egress scenarios
	// (egress.go); nil skips them.
	Egress *EgressDaemon
}

// Validate explains what is wrong with o.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Image == "" {
		bad("image must not be empty")
	}
	if o.Runs < 1 {
		bad("runs must be at least 1, got %d", o.Runs)
	}
	if o.Warmup < 0 {
		bad("warm-up runs must not be negative, got %d", o.Warmup)
	}
	if o.Sandboxes < 1 {
		bad("sandboxes must be at least 1, got %d", o.Sandboxes)
	}
	if o.Callers < 1 {
		bad("callers must be at least 1, got %d", o.Callers)
	}
	if o.Duration <= 0 {
		bad("duration must be positive, got %s", o.Duration)
	}
	if o.StreamBytes < 1 {
		bad("stream size must be at least 1 byte, got %d", o.StreamBytes)
	}
	if o.ForkWide < 0 || o.ForkWide > MaxForkWide { // issue 46
		bad("fork-wide must be between 0 (off) and %d, got %d", MaxForkWide, o.ForkWide)
	}
	if o.MaxIdle < 1 {
		bad("max idle sandboxes must be at least 1, got %d", o.MaxIdle)
	}
	for _, n := range o.Bursts {
		if n < 1 {
			bad("a burst must have at least 1 create, got %d", n)
		}
	}
	if o.SteadyRate <= 0 || o.SteadyDuration <= 0 {
		bad("the steady create rate and its duration must be positive, got %g/s for %s", o.SteadyRate, o.SteadyDuration)
	}
	if o.MixedRate <= 0 || o.MixedDuration <= 0 || len(o.MixedImages) == 0 { // issue 46: 3
		bad("create-mixed needs a positive rate and duration and at least one image, got %g/s for %s of %q", o.MixedRate, o.MixedDuration, o.MixedImages)
	}
	if o.E2BKey != "" && !config.IsE2BKey(o.E2BKey) {
		bad("the E2B key must be %s", config.E2BKeyForm)
	}
	for i, rt := range o.Runtimes {
		switch {
		case rt == "":
			bad("a runtime name must not be empty")
		case slices.Contains(o.Runtimes[:i], rt):
			bad("runtime %s is named twice", rt)
		}
	}
	return errors.Join(errs...)
}

// Report is the outcome of a benchmark run.
type Report struct {
	Started time.Time `json:"started_at"`
	Daemon  string    `json:"daemon"`
	Host    Host      `json:"host"`
	Image   string    `json:"image"`
	Runs    int       `json:"runs"`
	Warmup  int       `json:"warmup"`
	// Docker is the Docker Engine's version, or why Docker was not
	// measured; "" when no scenario has a Docker baseline.
	Docker string `json:"docker,omitempty"`
	// Results are in the order of the Scenarios table.
	Results []Result `json:"results"`
	// OverheadMs is what hutch adds to an exec of true (see Overhead), when
	// the spawn floor was measured.
	OverheadMs *float64 `json:"exec_overhead_ms,omitempty"`
	// Reference is the host's own speed at the start and end of the run
	// (reference.go), and VsHost the run's exec figures compared with it.
	Reference *Reference  `json:"host_reference,omitempty"`
	VsHost    []HostRatio `json:"vs_host,omitempty"`
	// Runtimes are the runtimes the daemon listed on /healthz, when a
	// runtime scenario ran.
	Runtimes []api.RuntimeInfo `json:"runtimes,omitempty"`
}

// Result is the outcome of one scenario or baseline: latency statistics,
// a throughput, memory sizes or a capacity; or the error that ended it, or
// why it could not run here.
type Result struct {
	Name       string      `json:"name"`
	Title      string      `json:"title"`
	Latency    *Stats      `json:"latency,omitempty"`
	Throughput *Throughput `json:"throughput,omitempty"`
	Memory     *Sizes      `json:"memory,omitempty"`
	Capacity   *Capacity   `json:"capacity,omitempty"`
	// Loads are the loads of creates of create-burst and create-steady.
	Loads   []CreateLoad `json:"create_loads,omitempty"`
	Err     string       `json:"error,omitempty"`
	Skipped string       `json:"skipped,omitempty"`
	// Note says how the measurement was made, when the title does not.
	Note string `json:"note,omitempty"`
	// Floor has the execs of true over HTTP timed in rounds with the spawn
	// floor samples (the spawn floor scenario only).
	Floor *FloorPairs `json:"floor_rounds,omitempty"`
	// Baselines are the same measurement by other tools.
	Baselines []Result `json:"baselines,omitempty"`
	// VsDocker is how many times better hutch did than Docker: Docker's p50
	// over hutch's for times and memory, hutch's rate over Docker's for
	// throughput. Absent without a Docker measurement.
	VsDocker *float64 `json:"vs_docker,omitempty"`
	// Runtime is the runtime a runtime scenario measured in, and
	// VsRuntime its figures over the run's first runtime's.
	Runtime   *RuntimeRef   `json:"runtime,omitempty"`
	VsRuntime *RuntimeRatio `json:"vs_runtime,omitempty"`
	// issue 37: Egress has the egress scenarios' added times, ratios,
	// CPU per request, rates and RSS growth.
	Egress *EgressFigures `json:"egress,omitempty"`
}

// FloorPairs are the execs of true timed in rounds with the spawn floor
// samples, and for each round the difference of the two medians.
type FloorPairs struct {
	Exec  Stats `json:"exec_true"`
	Added Stats `json:"added_per_round"`
}

// Throughput is the outcome of a concurrent scenario.
type Throughput struct {
	Sandboxes int `json:"sandboxes"`
	Callers   int `json:"callers_per_sandbox"`
	// Execs is the number of execs that finished in Elapsed.
	Execs   int           `json:"execs"`
	Elapsed time.Duration `json:"-"`
	PerSec  float64       `json:"per_sec"`
	// Latency is the round trip of each exec under this load.
	Latency Stats `json:"latency"`
	// CPU is the host CPU time each exec cost, by class of process, with
	// the total last; absent when those processes are not on this machine.
	CPU []CPUShare `json:"cpu_per_exec,omitempty"`
}

// MarshalJSON adds Elapsed in milliseconds, the unit of every report.
func (t Throughput) MarshalJSON() ([]byte, error) {
	type plain Throughput // without this method
	return json.Marshal(struct {
		plain
		ElapsedMs float64 `json:"elapsed_ms"`
	}{plain(t), ms(t.Elapsed)})
}

// Failed reports whether any scenario or baseline failed (a skipped one
// did not).
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Results, func(res Result) bool {
		return res.Err != "" || slices.ContainsFunc(res.Baselines, func(b Result) bool { return b.Err != "" })
	})
}

// latency returns the successful latency result of scenario name.
func (r Report) latency(name string) (*Stats, bool) {
	for _, res := range r.Results {
		if res.Name == name && res.Err == "" && res.Latency != nil {
			return res.Latency, true
		}
	}
	return nil, false
}

// Overhead is what hutch adds to the bare cost of running a process.
type Overhead struct {
	// Exec and Floor are the p50s of an exec of true over HTTP and of a
	// process start inside the sandbox; Added is what hutch adds: when
	// Paired, the median over the spawn floor's rounds of the difference
	// of their medians, else Exec − Floor.
	Exec, Floor, Added time.Duration
	Paired             bool
}

// Overhead compares the spawn floor with execs of true over HTTP: those
// timed alongside it when it has them, else the exec-true scenario's. ok is
// false without a spawn floor and an exec to compare it with.
func (r Report) Overhead() (o Overhead, ok bool) {
	for _, res := range r.Results {
		if res.Name == NameSpawnFloor && res.Err == "" && res.Latency != nil && res.Floor != nil {
			return Overhead{Exec: res.Floor.Exec.P50, Floor: res.Latency.P50, Added: res.Floor.Added.P50, Paired: true}, true
		}
	}
	e, ok1 := r.latency(NameExecTrue)
	f, ok2 := r.latency(NameSpawnFloor)
	if !ok1 || !ok2 {
		return Overhead{}, false
	}
	return Overhead{Exec: e.P50, Floor: f.P50, Added: e.P50 - f.P50}, true
}

// Names lists the scenario names in table order.
func Names() []string {
	names := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		names[i] = s.Name
	}
	return names
}

// DefaultNames lists the scenarios of a run that names none: all but the
// runtime scenarios.
func DefaultNames() []string {
	var names []string
	for _, s := range Scenarios {
		if s.inRuntime == nil {
			names = append(names, s.Name)
		}
	}
	return names
}

// RuntimeNames lists the runtime scenarios, which measure in each runtime
// of Options.Runtimes.
func RuntimeNames() []string {
	var names []string
	for _, s := range Scenarios {
		if s.inRuntime != nil {
			names = append(names, s.Name)
		}
	}
	return names
}

// NeedsPoolDaemon reports whether any of scenarios measures the warm pool
// with its default settings (Options.PoolDaemon).
func NeedsPoolDaemon(scenarios []Scenario) bool {
	return slices.ContainsFunc(scenarios, func(s Scenario) bool { return s.poolDaemon })
}

// Select returns the scenarios called names, in table order; an unknown
// or missing name is an error.
func Select(names []string) ([]Scenario, error) {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(Names(), n) {
			return nil, fmt.Errorf("unknown scenario %q; known scenarios: %s", n, strings.Join(Names(), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no scenario given; known scenarios: %s", strings.Join(Names(), ", "))
	}
	var out []Scenario
	for _, s := range Scenarios {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Run runs scenarios, each followed by its baselines, against the daemon
// c talks to. A failed scenario is recorded in its Result and the others
// still run; only a daemon that does not answer, or the end of ctx, ends
// the run with an error. Every sandbox and container the run creates is
// gone when Run returns.
func Run(ctx context.Context, c *client.Client, opts Options, scenarios []Scenario) (Report, error) {
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	if err := c.Health(ctx); err != nil {
		return Report{}, fmt.Errorf("checking the daemon at %s: %w", c.URL(), err)
	}
	rep := Report{
		Started: time.Now().UTC().Truncate(time.Second),
		Daemon:  c.URL(),
		Host:    LocalHost(ctx, opts.RunscPath),
		Image:   opts.Image,
		Runs:    opts.Runs,
		Warmup:  opts.Warmup,
	}
	e := &env{c: c, opts: opts, stops: newStopper(c, maxPendingStops)}
	defer e.close()
	e.progress("bench: host reference (spawn, pipe round trip)…")
	rep.Reference = &Reference{Start: measureHost(opts.Warmup, opts.Runs)}
	e.readPool(ctx)
	for _, s := range scenarios {
		if s.inRuntime != nil {
			results, err := e.eachRuntime(ctx, s)
			rep.Results = append(rep.Results, results...)
			if err != nil {
				return rep, err
			}
			continue
		}
		res, err := e.runScenario(ctx, s)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.compareWithDocker(scenarios)
	rep.compareRuntimes()
	rep.Runtimes = e.runtimeInfos
	rep.Host.LoadEnd = loadAvg1m()
	e.progress("bench: host reference (spawn, pipe round trip)…")
	rep.Reference.End = measureHost(opts.Warmup, opts.Runs)
	if e.docker.setUp {
		rep.Docker = e.docker.version
		if e.docker.missing != "" {
			rep.Docker = dockerMissing(e.docker.missing)
		}
	}
	if o, ok := rep.Overhead(); ok {
		v := ms(o.Added)
		rep.OverheadMs = &v
	}
	rep.VsHost = rep.compareWithHost()
	return rep, nil
}

// runScenario runs scenario s, then its baselines. Only the end of ctx is
// an error: a failure is the result's.
func (e *env) runScenario(ctx context.Context, s Scenario) (Result, error) {
	e.progress("bench: %s…", s.Title)
	res, err := s.run(ctx, e)
	// Teardowns finish before the next scenario, off its clock.
	if serr := e.stops.drain(); err == nil {
		err = serr
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	res = outcome(s.Name, s.Title, res, err)
	for _, b := range s.baselines {
		e.progress("bench:   %s…", b.title)
		br, err := b.run(ctx, e)
		e.docker.removals.Wait()
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		res.Baselines = append(res.Baselines, outcome(b.name, b.title, br, err))
	}
	return res, nil
}

// dockerMissing is Report.Docker when Docker was not measured, and why.
func dockerMissing(why string) string { return "not measured: " + why }

// outcome completes the result of a scenario or baseline with its name,
// title and error: a skipError marks it skipped, any other error failed.
func outcome(name, title string, res Result, err error) Result {
	var skip *skipError
	switch {
	case errors.As(err, &skip):
		res = Result{Skipped: skip.reason}
	case err != nil:
		res = Result{Err: err.Error()}
	}
	res.Name, res.Title = name, title
	return res
}

// close ends what the run opened: the engine session, the Docker client.
func (e *env) close() {
	if e.ws != nil {
		e.ws.close()
	}
	e.docker.removals.Wait()
	if e.docker.c != nil {
		e.docker.c.close()
	}
}

// compareWithDocker sets VsDocker on every result that has a Docker
// measurement of its own, or one of the scenario it names (dockerOf).
func (r *Report) compareWithDocker(scenarios []Scenario) {
	dockerOf := map[string]string{}
	for _, s := range scenarios {
		dockerOf[s.Name] = s.dockerOf
	}
	find := func(name string) *Result {
		for i := range r.Results {
			if r.Results[i].Name != name {
				continue
			}
			for j := range r.Results[i].Baselines {
				if b := &r.Results[i].Baselines[j]; b.Name == baselineDocker && b.Err == "" && b.Skipped == "" {
					return b
				}
			}
		}
		return nil
	}
	for i := range r.Results {
		res := &r.Results[i]
		if res.Err != "" || res.Skipped != "" {
			continue
		}
		d := find(res.Name)
		if d == nil && dockerOf[res.Name] != "" {
			d = find(dockerOf[res.Name])
		}
		if d != nil {
			res.VsDocker = ratio(*res, *d)
		}
	}
}

// ratio is how many times better hutch's result is than Docker's d, or nil
// when they do not compare.
func ratio(hutch, d Result) *float64 {
	var v float64
	switch {
	case hutch.Latency != nil && d.Latency != nil && hutch.Latency.P50 > 0:
		v = float64(d.Latency.P50) / float64(hutch.Latency.P50)
	case hutch.Throughput != nil && d.Throughput != nil && d.Throughput.PerSec > 0:
		v = hutch.Throughput.PerSec / d.Throughput.PerSec
	case hutch.Memory != nil && d.Memory != nil && hutch.Memory.P50 > 0:
		v = float64(d.Memory.P50) / float64(hutch.Memory.P50)
	default:
		return nil
	}
	return &v
}
