package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

func TestParseSeconds(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []time.Duration
		wantErr string
	}{
		{name: "lines", out: "0.000512000\n0.001000000\n", want: []time.Duration{512 * time.Microsecond, time.Millisecond}},
		{name: "blank lines and spaces", out: "\n 0.002 \n\n0.003", want: []time.Duration{2 * time.Millisecond, 3 * time.Millisecond}},
		{name: "too few", out: "0.1\n", wantErr: "got 1, want 2"},
		{name: "not a number", out: "0.1\nTraceback\n", wantErr: `"Traceback" is not a duration`},
		{name: "negative", out: "0.1\n-0.1\n", wantErr: "is not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSeconds(tt.out, 2)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("parseSeconds = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "all, table order", in: Names(), want: Names()},
		{name: "reordered and spaced", in: []string{" spawn-floor", "exec-true "}, want: []string{NameExecTrue, NameSpawnFloor}},
		{name: "duplicates once", in: []string{"create", "create"}, want: []string{NameCreate}},
		{name: "unknown", in: []string{"create", "docker"}, wantErr: `unknown scenario "docker"; known scenarios: create-exec, pool-create-exec, create,`},
		{name: "empty", in: []string{""}, wantErr: "no scenario given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("Select = %v, want %v", names, tt.want)
			}
		})
	}
}

func validOptions() Options {
	return Options{Image: "python", Runs: 3, Warmup: 1, Sandboxes: 6, Callers: 2, Duration: 30 * time.Millisecond, StreamBytes: 1 << 20, MaxIdle: 4,
		Bursts: []int{3, 5}, SteadyRate: 20, SteadyDuration: 100 * time.Millisecond,
		MixedRate: 2, MixedDuration: time.Second, MixedImages: []string{"python", "node"}}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Options)
		wantErr string
	}{
		{name: "valid", edit: func(*Options) {}},
		{name: "no warm-up is fine", edit: func(o *Options) { o.Warmup = 0 }},
		{name: "no image", edit: func(o *Options) { o.Image = "" }, wantErr: "image must not be empty"},
		{name: "no runs", edit: func(o *Options) { o.Runs = 0 }, wantErr: "runs must be at least 1, got 0"},
		{name: "negative warm-up", edit: func(o *Options) { o.Warmup = -1 }, wantErr: "warm-up runs must not be negative"},
		{name: "no sandboxes", edit: func(o *Options) { o.Sandboxes = 0 }, wantErr: "sandboxes must be at least 1"},
		{name: "no callers", edit: func(o *Options) { o.Callers = 0 }, wantErr: "callers must be at least 1"},
		{name: "no duration", edit: func(o *Options) { o.Duration = 0 }, wantErr: "duration must be positive"},
		{name: "no stream", edit: func(o *Options) { o.StreamBytes = 0 }, wantErr: "stream size must be at least 1 byte"},
		{name: "no idle sandboxes", edit: func(o *Options) { o.MaxIdle = 0 }, wantErr: "max idle sandboxes must be at least 1"},
		{name: "empty burst", edit: func(o *Options) { o.Bursts = []int{10, 0} }, wantErr: "a burst must have at least 1 create, got 0"},
		{name: "no steady rate", edit: func(o *Options) { o.SteadyRate = 0 }, wantErr: "the steady create rate and its duration must be positive"},
		{name: "fork ×100", edit: func(o *Options) { o.ForkWide = 100 }},                                                                    // issue 46
		{name: "fork wider than a fork", edit: func(o *Options) { o.ForkWide = 101 }, wantErr: "fork-wide must be between 0 (off) and 100"}, // issue 46
		{name: "no mixed images", edit: func(o *Options) { o.MixedImages = nil }, wantErr: "create-mixed needs a positive rate and duration and at least one image"},
		{name: "no mixed duration", edit: func(o *Options) { o.MixedDuration = 0 }, wantErr: "create-mixed needs a positive rate and duration"},
		{name: "an E2B key", edit: func(o *Options) { o.E2BKey = "e2b_0123456789abcdef0123456789abcdef" }},
		{name: "not an E2B key", edit: func(o *Options) { o.E2BKey = "sk-0123456789abcdef0123456789abcdef" }, wantErr: "the E2B key must be e2b_ and at least 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.edit(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// fakeDaemon is a fake manager (the real one needs root and runsc) that
// hands out distinct sandbox ids, answers the spawn-floor script like
// python would, and checks that teardowns never pile up.
type fakeDaemon struct {
	t    *testing.T
	fake *functionstest.Fake
	// failArgv0, when set, makes execs of that program exit 1.
	failArgv0 string
	// createDelay, when set, is how long a create in each runtime takes.
	createDelay map[string]time.Duration

	// mu guards the fields below.
	mu          sync.Mutex
	next        int
	live        map[string]bool // created, not yet torn down
	created     []string
	requests    []api.CreateRequest
	tearingDown int // stops with wait under way
	maxTearing  int
}

func newFakeDaemon(t *testing.T) (*fakeDaemon, *client.Client) {
	return newFakeDaemonWith(t, httpapi.Options{})
}

// newFakeDaemonWith is newFakeDaemon with the HTTP API's options (the
// runtimes /healthz lists).
func newFakeDaemonWith(t *testing.T, opts httpapi.Options) (*fakeDaemon, *client.Client) {
	d := &fakeDaemon{t: t, live: map[string]bool{}}
	d.fake = &functionstest.Fake{
		CreateFunc: d.create,
		ExecFunc:   d.exec,
		StopFunc:   d.stop,
	}
	srv := functionstest.NewServer(t, d.fake, opts)
	return d, client.New(srv.URL, "")
}

func (d *fakeDaemon) create(_ context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	time.Sleep(d.createDelay[req.Runtime])
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, req)
	d.next++
	id := fmt.Sprintf("5b0e3c1a-7d2f-4c1e-9a7b-%012d", d.next)
	d.live[id] = true
	d.created = append(d.created, id)
	return api.CreateResponse{SandboxID: id, Image: req.Image}, nil
}

func (d *fakeDaemon) exec(_ context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	d.mu.Lock()
	live := d.live[req.SandboxID]
	d.mu.Unlock()
	if !live {
		return api.ExecResponse{}, errdefs.New(errdefs.CodeNotFound, "no live sandbox with id %s", req.SandboxID)
	}
	code := 0
	res := api.ExecResponse{ExitCode: &code, Success: true}
	switch {
	case req.Argv[0] == d.failArgv0:
		code = 1
		res.Success, res.Stderr = false, "boom"
	case len(req.Argv) == 5 && req.Argv[2] == spawnScript:
		var runs int
		fmt.Sscan(req.Argv[3], &runs)
		res.Stdout = strings.Repeat("0.000250000\n", runs)
	}
	return res, nil
}

func (d *fakeDaemon) stop(_ context.Context, req api.StopRequest) (api.StopResponse, error) {
	d.mu.Lock()
	if !d.live[req.SandboxID] {
		d.mu.Unlock()
		return api.StopResponse{}, errdefs.New(errdefs.CodeNotFound, "no live sandbox with id %s", req.SandboxID)
	}
	if !req.Wait {
		d.mu.Unlock()
		return api.StopResponse{SandboxID: req.SandboxID, Stopped: true}, nil
	}
	d.tearingDown++
	d.maxTearing = max(d.maxTearing, d.tearingDown)
	d.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // a teardown takes a while
	d.mu.Lock()
	d.tearingDown--
	delete(d.live, req.SandboxID)
	d.mu.Unlock()
	return api.StopResponse{SandboxID: req.SandboxID, Stopped: true}, nil
}

func TestRun(t *testing.T) {
	// The fake daemon has no file, process, state or event functions, no /metrics (so
	// no warm pool), no engine WebSocket and no processes of its
	// sandboxes; Docker and runsc are not given, so every baseline is
	// skipped.
	noFs := []string{NameEvents, NameInterpCell, NameContextCreate, NamePreview, NamePreviewRate, NameVolumeWrite, NameFsSmall, NameFsSmallRaw, NameFsStream, NameStreamLatency, NamePtyEcho, NameStreamRate, NameProcessList, NamePauseResume, NameSnapshot, NameRestoreExec, NameForkExec, NameHibernated,
		NameTemplateRebuild, NameTemplateHTTP} // no template functions (issue 39)
	// The runtime scenarios run in the daemon's default runtime, which the
	// fake does not name.
	skipped := []string{NamePoolCreateExec, NameCreateSteady, NameCreateMixed, NameE2BCreate, NameExecTrueWS, NameExecPythonWS, NameE2BExecTrue, NameE2BForkExec, NameIdleMemory, NameIdleCapacity,
		NameEgressHTTPS, NameEgressDownload, // issue 37: no egress daemon
		NameTemplateDisk, NameRuntimeMemory + "/" + defaultRuntimeName}
	tests := []struct {
		name        string
		scenarios   []string
		failArgv0   string
		wantFailed  []string
		wantSkipped []string
	}{
		{name: "every scenario", scenarios: Names(), wantFailed: noFs, wantSkipped: skipped},
		{name: "a failing command fails only its scenarios", scenarios: Names(), failArgv0: "python3",
			wantFailed: append([]string{NameExecPython, NameSpawnFloor}, noFs...), wantSkipped: skipped},
		{name: "a selection", scenarios: []string{NameCreate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, c := newFakeDaemon(t)
			d.failArgv0 = tt.failArgv0
			sel, err := Select(tt.scenarios)
			if err != nil {
				t.Fatal(err)
			}
			opts := validOptions()
			rep, err := Run(t.Context(), c, opts, sel)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}

			var names, failed, skipped []string
			for _, res := range rep.Results {
				names = append(names, res.Name)
				for _, b := range res.Baselines {
					if b.Skipped == "" || b.Err != "" {
						t.Errorf("%s: baseline %s ran without Docker or runsc: %+v", res.Name, b.Name, b)
					}
				}
				if res.Err != "" {
					failed = append(failed, res.Name)
					continue
				}
				if res.Skipped != "" {
					skipped = append(skipped, res.Name)
					continue
				}
				switch {
				case res.Latency != nil:
					if n := len(res.Latency.Samples); n != opts.Runs {
						t.Errorf("%s: %d samples, want %d", res.Name, n, opts.Runs)
					}
				case res.Throughput != nil:
					tp := res.Throughput
					if tp.Execs == 0 || tp.PerSec <= 0 || tp.Elapsed < opts.Duration || len(tp.Latency.Samples) != tp.Execs {
						t.Errorf("%s: implausible throughput %+v", res.Name, tp)
					}
				case res.Loads != nil:
					// Without a pool, bursts are measured with it off only.
					if len(res.Loads) != len(opts.Bursts) {
						t.Errorf("%s: %d loads, want %d", res.Name, len(res.Loads), len(opts.Bursts))
					}
					for _, l := range res.Loads {
						if l.Pool || l.Creates != len(l.Latency.Samples) || l.PerSec <= 0 || l.FromPool != 0 {
							t.Errorf("%s: implausible load %+v", res.Name, l)
						}
					}
				default:
					t.Errorf("%s: neither latency nor throughput", res.Name)
				}
			}
			var wantNames []string
			for _, n := range tt.scenarios {
				if slices.Contains(RuntimeNames(), n) {
					n += "/" + defaultRuntimeName
				}
				wantNames = append(wantNames, n)
			}
			if !slices.Equal(names, wantNames) {
				t.Errorf("results of %v, want %v", names, wantNames)
			}
			slices.Sort(failed)
			slices.Sort(tt.wantFailed)
			if !slices.Equal(failed, tt.wantFailed) || rep.Failed() != (len(tt.wantFailed) > 0) {
				t.Errorf("failed %v (Failed() = %v), want %v", failed, rep.Failed(), tt.wantFailed)
			}
			if !slices.Equal(skipped, tt.wantSkipped) {
				t.Errorf("skipped %v, want %v", skipped, tt.wantSkipped)
			}
			_, overhead := rep.Overhead()
			// The spawn floor times its own execs of true beside its samples.
			if want := !slices.Contains(tt.wantFailed, NameSpawnFloor) && slices.Contains(names, NameSpawnFloor); overhead != want || (rep.OverheadMs != nil) != want {
				t.Errorf("overhead reported %v, want %v", overhead, want)
			}

			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.created) == 0 {
				t.Fatal("no sandbox created")
			}
			if len(d.live) != 0 {
				t.Errorf("%d of %d sandboxes left running", len(d.live), len(d.created))
			}
			if d.maxTearing > maxPendingStops {
				t.Errorf("%d teardowns at once, want at most %d", d.maxTearing, maxPendingStops)
			}
		})
	}
}

func TestRunNeedsADaemon(t *testing.T) {
	c := client.New("http://127.0.0.1:1", "")
	_, err := Run(t.Context(), c, validOptions(), Scenarios)
	if err == nil || !client.IsUnreachable(err) {
		t.Fatalf("Run = %v, want an unreachable daemon error", err)
	}
}

// TestMixedRequest: create-mixed's creates cycle through the images, and
// through the shapes for each image, so that every pair comes once in
// images × shapes creates.
func TestMixedRequest(t *testing.T) {
	images := []string{"python", "node"}
	seen := map[string]int{}
	for i := range 2 * len(images) * len(mixedShapes) {
		req := mixedRequest(images, i)
		if req.Image != images[i%len(images)] || req.Name != sandboxName {
			t.Fatalf("create %d: %+v, want image %s", i, req, images[i%len(images)])
		}
		seen[fmt.Sprintf("%s %d cpu %d MiB", req.Image, req.CPUs, req.MemoryMB)]++
	}
	if len(seen) != len(images)*len(mixedShapes) {
		t.Errorf("%d image and shape pairs, want %d: %v", len(seen), len(images)*len(mixedShapes), seen)
	}
	for req, n := range seen {
		if n != 2 {
			t.Errorf("%s came %d times in two cycles, want 2", req, n)
		}
	}
}
