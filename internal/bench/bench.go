// Package bench measures a running sbx daemon from the client side: the
// latency of creating sandboxes and running commands in them, the cost of
// starting a process inside a sandbox (the floor an exec is compared
// with), and exec throughput under concurrency. Every measurement is a
// Scenario, one entry of the Scenarios table; Run runs a selection of them
// and returns a Report, which renders itself as Markdown and JSON.
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

	"github.com/sbx-dev/sbx/client"
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
	// RunscPath is the runsc binary whose version the report names; empty
	// or missing leaves it out.
	RunscPath string
	// Progress, when not nil, receives one line per scenario as it starts.
	Progress io.Writer
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
	// Results are in the order of the Scenarios table.
	Results []Result `json:"results"`
	// OverheadMs is exec-true p50 minus spawn-floor p50, when both ran.
	OverheadMs *float64 `json:"exec_overhead_ms,omitempty"`
}

// Result is the outcome of one scenario: latency statistics or a
// throughput, or the error that ended it.
type Result struct {
	Name       string      `json:"name"`
	Title      string      `json:"title"`
	Latency    *Stats      `json:"latency,omitempty"`
	Throughput *Throughput `json:"throughput,omitempty"`
	Err        string      `json:"error,omitempty"`
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
}

// MarshalJSON adds Elapsed in milliseconds, the unit of every report.
func (t Throughput) MarshalJSON() ([]byte, error) {
	type plain Throughput // without this method
	return json.Marshal(struct {
		plain
		ElapsedMs float64 `json:"elapsed_ms"`
	}{plain(t), ms(t.Elapsed)})
}

// Failed reports whether any scenario failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Results, func(res Result) bool { return res.Err != "" })
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

// Overhead returns the p50 of an exec of true over HTTP, the p50 of a
// process start inside the sandbox, and their difference: what sbx adds
// to the bare cost of running a process. ok is false unless both ran.
func (r Report) Overhead() (exec, floor, overhead time.Duration, ok bool) {
	e, ok1 := r.latency(NameExecTrue)
	f, ok2 := r.latency(NameSpawnFloor)
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	return e.P50, f.P50, e.P50 - f.P50, true
}

// Names lists the scenario names in table order.
func Names() []string {
	names := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		names[i] = s.Name
	}
	return names
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

// Run runs scenarios against the daemon c talks to. A failed scenario is
// recorded in its Result and the others still run; only a daemon that
// does not answer, or the end of ctx, ends the run with an error. Every
// sandbox the run creates is gone when Run returns.
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
	for _, s := range scenarios {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "bench: %s…\n", s.Title)
		}
		res, err := s.run(ctx, e)
		// Teardowns finish before the next scenario, off its clock.
		if serr := e.stops.drain(); err == nil {
			err = serr
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		res.Name, res.Title = s.Name, s.Title
		if err != nil {
			res = Result{Name: s.Name, Title: s.Title, Err: err.Error()}
		}
		rep.Results = append(rep.Results, res)
	}
	if _, _, d, ok := rep.Overhead(); ok {
		v := ms(d)
		rep.OverheadMs = &v
	}
	return rep, nil
}
