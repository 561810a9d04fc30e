package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/bench"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestBenchScenarios runs every benchmark scenario, briefly, against a
// real daemon with a warm pool: each one must measure (none fail or skip),
// and the run must leave nothing behind. Docker is never a test
// dependency: its baselines are off; runsc do runs.
func TestBenchScenarios(t *testing.T) {
	d := startDaemon(t, baseConfig("max_concurrent_sandboxes: 12\nwarm_pool: {python: 2}\n"))
	d.waitPoolReady("python", 2)
	opts := bench.Options{
		Image: "python", Runs: 3, Warmup: 1, Sandboxes: 2, Callers: 2, Duration: 500 * time.Millisecond,
		StreamBytes: 8 << 20, MaxIdle: 4, EngineURL: d.engineURL, RunscPath: testutil.RunscPath(),
		ImageCache: testutil.ImageCacheDir(), SlowCreate: 10 * time.Minute,
		Bursts: []int{3}, SteadyRate: 4, SteadyDuration: time.Second,
		MixedRate: 4, MixedDuration: time.Second, MixedImages: []string{"python", "node"}, // issue 46: 3
		DataDir: d.dataDir, Egress: startEgressDaemon(t),
	}
	rep, md := runBench(t, d, opts, bench.Scenarios)
	for _, res := range rep.Results {
		if res.Err != "" || res.Skipped != "" {
			t.Errorf("%s: error %q, skipped %q", res.Name, res.Err, res.Skipped)
		}
		for _, b := range res.Baselines {
			if b.Err != "" || (b.Name != "docker" && b.Skipped != "") {
				t.Errorf("%s ↳ %s: error %q, skipped %q", res.Name, b.Name, b.Err, b.Skipped)
			}
		}
		switch res.Name {
		case bench.NameIdleMemory:
			if m := res.Memory; m == nil || m.P50 < 4<<20 || m.P50 > 256<<20 {
				t.Errorf("memory per idle sandbox = %+v, want between 4 and 256 MiB", m)
			}
		case bench.NameIdleCapacity:
			if c := res.Capacity; c == nil || c.Held != opts.MaxIdle || !strings.Contains(c.Limit, "--max-idle 4") {
				t.Errorf("idle capacity = %+v, want %d held up to the cap", c, opts.MaxIdle)
			}
		case bench.NameCreateMixed: // issue 46: 3
			if len(res.Loads) != 1 || res.Loads[0].Creates != 4 || len(res.Loads[0].Latency.Samples) != 4 || !strings.Contains(res.Note, "served from the warm pool") {
				t.Errorf("create-mixed = %+v, note %q, want 4 creates measured and the pool's share", res.Loads, res.Note)
			}
		case bench.NameE2BCreate:
			// The pool is full before each create: every one is a hit.
			if !strings.Contains(res.Note, "3 of 3 creates served from the warm pool;") {
				t.Errorf("E2B creates not all served by the pool: note %q", res.Note)
			}
		case bench.NameE2BExecTrue:
			if len(res.Baselines) != 1 || res.Baselines[0].Latency == nil || !strings.Contains(res.Note, "E2B − REST: p50 ") {
				t.Errorf("commands.run not compared with the REST exec: %+v", res)
			}
		case bench.NameCreateExec:
			if !strings.Contains(res.Note, "warm pool") {
				t.Errorf("cold creates on a daemon with a pool are not told apart: note %q", res.Note)
			}
		case bench.NameRuntimeMemory + "/gvisor":
			// Without --runtimes, the runtime scenarios run in the default.
			if m := res.Memory; m == nil || res.Runtime == nil || res.Runtime.Mode == "" || m.P50 < 4<<20 || m.P50 > 256<<20 {
				t.Errorf("memory per idle gVisor sandbox = %+v in %+v, want between 4 and 256 MiB in a runtime with its mode", m, res.Runtime)
			}
		}
	}
	t.Run("microvm beside gvisor", func(t *testing.T) {
		testutil.RequiresRuntime(t, "microvm")
		benchRuntimes(t, d, opts)
	})
	if i := slices.IndexFunc(rep.Results, func(r bench.Result) bool { return r.Name == bench.NameExecTrue }); i < 0 || rep.OverheadMs == nil {
		t.Errorf("no overhead over the spawn floor reported")
	}
	// The host reference is taken at both ends of the run, and the exec
	// figures are compared with it.
	if ref := rep.Reference; ref == nil {
		t.Errorf("no host reference")
	} else {
		for when, h := range map[string]bench.HostRef{"start": ref.Start, "end": ref.End} {
			figures := map[string]bench.Stats{"spawn": h.Spawn, "pipe on one CPU": h.PipeOneCPU}
			if runtime.NumCPU() > 1 {
				figures["pipe across two CPUs"] = h.PipeTwoCPUs
			}
			for name, s := range figures {
				if h.Err != "" || s.P50 <= 0 || len(s.Samples) != opts.Runs {
					t.Errorf("host reference at the %s: %s = %d samples, p50 %v (error %q); want %d positive samples", when, name, len(s.Samples), s.P50, h.Err, opts.Runs)
				}
			}
		}
	}
	if rep.Host.LoadEnd == "" || !slices.ContainsFunc(rep.VsHost, func(v bench.HostRatio) bool { return v.Name == bench.NameExecTrue && v.Ratio > 0 }) {
		t.Errorf("no load at the end or no exec ratio to the host reference: %q, %+v", rep.Host.LoadEnd, rep.VsHost)
	}
	if !strings.Contains(md.String(), "**Host reference**") || !strings.Contains(md.String(), "**× host reference**") {
		t.Errorf("the report does not show the host reference")
	}
	// Every sandbox the bench created goes (its stops end in the
	// background); only the pool's remain.
	var ids []string
	if !testutil.Poll(2*time.Minute, func() bool { ids = runscSandboxIDs(d.dataDir); return len(ids) <= 2 }) {
		t.Errorf("sandboxes left after the bench: %v", ids)
	}
}

// startEgressDaemon starts the egress scenarios' target and a daemon of
// their own, as `hutch bench` does (internal/cli/bench_egress.go).
func startEgressDaemon(t *testing.T) *bench.EgressDaemon {
	t.Helper()
	tg, err := bench.StartEgressTarget()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	d := launchDaemonEnv(t, baseConfig(tg.DaemonConfig()), "", "", tg.DaemonEnv())
	return &bench.EgressDaemon{Client: d.c, PID: d.cmd.Process.Pid, Target: tg}
}

// runBench runs scenarios against d and logs the report; it returns the
// report and its Markdown.
func runBench(t *testing.T, d *daemon, opts bench.Options, scenarios []bench.Scenario) (bench.Report, *bytes.Buffer) {
	t.Helper()
	rep, err := bench.Run(t.Context(), d.c, opts, scenarios)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", md.String())
	return rep, &md
}

// benchRuntimes runs the runtime scenarios in gVisor and the microVM on
// d: each measures in both, and the microVM's figures are compared with
// gVisor's and carry its accelerator.
func benchRuntimes(t *testing.T, d *daemon, opts bench.Options) {
	opts.Runtimes = []string{"gvisor", "microvm"}
	sel, err := bench.Select(bench.RuntimeNames())
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := runBench(t, d, opts, sel)
	if len(rep.Results) != 2*len(sel) {
		t.Errorf("%d results, want %d", len(rep.Results), 2*len(sel))
	}
	for _, res := range rep.Results {
		if res.Err != "" || res.Skipped != "" {
			t.Errorf("%s: error %q, skipped %q", res.Name, res.Err, res.Skipped)
			continue
		}
		if res.Runtime == nil || res.Runtime.Name == "microvm" && (res.VsRuntime == nil || res.VsRuntime.Of != "gvisor" ||
			(res.Runtime.Mode != "tcg" && res.Runtime.Mode != "kvm")) {
			t.Errorf("%s: runtime %+v, ratio %+v; want the microVM's accelerator and a ratio to gVisor", res.Name, res.Runtime, res.VsRuntime)
		}
	}
}

// TestBenchPrivateDaemon is `make bench` in miniature: `hutch bench
// --private` starts a daemon of its own (with a warm pool), measures, and
// stops it, leaving nothing behind.
func TestBenchPrivateDaemon(t *testing.T) {
	testutil.RequiresIntegration(t)
	hutch, agent := binaries(t)
	out := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.Command(hutch, "bench", "--private", "--runs", "2", "--warmup", "0", "--docker", "",
		"--scenarios", "create-exec,pool-create-exec,exec-true,exec-true-ws",
		"--image-cache", testutil.ImageCacheDir(), "--json-out", out)
	// The private daemon finds runsc and the agent on PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(testutil.RunscPath())+":"+filepath.Dir(agent)+":"+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hutch bench --private: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"| create→first exec (cold) | 2 |", "| create→first exec (warm pool) | 2 |", "| exec true (engine WebSocket) | 2 |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Name    string `json:"name"`
			Latency *struct {
				N int `json:"n"`
			} `json:"latency"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Results) != 4 || rep.Results[1].Latency == nil || rep.Results[1].Latency.N != 2 {
		t.Fatalf("results file: %+v, %v\n%s", rep, err, b)
	}
	// The private daemon wrote its log and data under one directory that
	// is gone now, with its sandboxes.
	log := strings.TrimSpace(strings.TrimPrefix(grepLines(stderr.String(), "private daemon (log "), "bench: started a private daemon (log "))
	dir := filepath.Dir(strings.TrimSuffix(log, ")"))
	if !strings.HasPrefix(filepath.Base(dir), "hutch-bench-") {
		t.Fatalf("no private daemon log named on stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("private daemon directory %s left behind (%v)", dir, err)
	}
	assertNoLeftovers(t, dir)
}
