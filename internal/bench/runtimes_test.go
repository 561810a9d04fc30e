package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// fakeRuntimes is what a daemon with both runtimes under TCG lists, and one
// its host cannot run.
var fakeRuntimes = []api.RuntimeInfo{
	{Name: "gvisor", Mode: "systrap", Abilities: "pause", Available: true, Default: true},
	{Name: "microvm", Mode: "tcg", Abilities: "pause,stats", Available: true},
	{Name: "kata", Abilities: "none", Unavailable: "no kata-runtime on PATH"},
}

func TestChooseRuntimes(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		infos []api.RuntimeInfo
		want  []runtimeChoice
	}{
		{name: "none named: the default", infos: fakeRuntimes,
			want: []runtimeChoice{{RuntimeRef: RuntimeRef{Name: "gvisor", Mode: "systrap"}, create: "gvisor"}}},
		{name: "a daemon that lists none: its default, unnamed",
			want: []runtimeChoice{{RuntimeRef: RuntimeRef{Name: defaultRuntimeName}}}},
		{name: "in the order named", names: []string{"microvm", "gvisor"}, infos: fakeRuntimes,
			want: []runtimeChoice{{RuntimeRef: RuntimeRef{Name: "microvm", Mode: "tcg"}, create: "microvm"},
				{RuntimeRef: RuntimeRef{Name: "gvisor", Mode: "systrap"}, create: "gvisor"}}},
		{name: "not offered, unavailable, not listed", names: []string{"firecracker", "kata"}, infos: fakeRuntimes,
			want: []runtimeChoice{
				{RuntimeRef: RuntimeRef{Name: "firecracker"}, create: "firecracker", skip: "the daemon does not offer runtime firecracker (it offers gvisor, microvm, kata)"},
				{RuntimeRef: RuntimeRef{Name: "kata"}, create: "kata", skip: "runtime kata is not available on the daemon's host: no kata-runtime on PATH"}}},
		{name: "a daemon that lists none: named ones skipped", names: []string{"microvm"},
			want: []runtimeChoice{{RuntimeRef: RuntimeRef{Name: "microvm"}, create: "microvm",
				skip: "the daemon does not list its runtimes on /healthz (a daemon without runtime-per-create); cannot create microvm sandboxes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chooseRuntimes(tt.names, tt.infos); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chooseRuntimes = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestRunRuntimes: the runtime scenarios run in each runtime named, in
// turn, compared with the first; a runtime the daemon lacks is skipped,
// not failed; the report names each runtime's mode.
func TestRunRuntimes(t *testing.T) {
	d, c := newFakeDaemonWith(t, httpapi.Options{Runtimes: fakeRuntimes})
	d.createDelay = map[string]time.Duration{"microvm": 20 * time.Millisecond}
	opts := validOptions()
	opts.Runtimes = []string{"gvisor", "microvm", "kata", "firecracker"}
	sel, err := Select(RuntimeNames())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), c, opts, sel)
	if err != nil {
		t.Fatal(err)
	}
	var names, measured []string
	for _, res := range rep.Results {
		names = append(names, res.Name)
		if res.Runtime == nil || res.Name != res.Runtime.Name && !strings.HasSuffix(res.Name, "/"+res.Runtime.Name) {
			t.Errorf("%s: runtime %+v", res.Name, res.Runtime)
		}
		if res.Err != "" {
			t.Errorf("%s failed: %s", res.Name, res.Err)
		}
		if res.Skipped == "" {
			measured = append(measured, res.Name)
		}
	}
	var want []string
	for _, n := range RuntimeNames() {
		for _, rt := range opts.Runtimes {
			want = append(want, n+"/"+rt)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("results %v, want %v", names, want)
	}
	// The fake's sandboxes have no host processes: idle memory is skipped.
	wantMeasured := []string{"runtime-ready/gvisor", "runtime-ready/microvm", "runtime-exec-true/gvisor", "runtime-exec-true/microvm"}
	if !slices.Equal(measured, wantMeasured) {
		t.Errorf("measured %v, want %v", measured, wantMeasured)
	}
	byName := map[string]Result{}
	for _, res := range rep.Results {
		byName[res.Name] = res
	}
	if r := byName["runtime-ready/microvm"]; r.Runtime.Mode != "tcg" || r.VsRuntime == nil || r.VsRuntime.Of != "gvisor" || r.VsRuntime.P50 <= 1 {
		t.Errorf("microvm's ready time against gvisor's: runtime %+v, ratio %+v; want mode tcg and a ratio above 1", r.Runtime, r.VsRuntime)
	}
	if r := byName["runtime-ready/gvisor"]; r.VsRuntime != nil || r.Latency == nil || len(r.Latency.Samples) != opts.Runs {
		t.Errorf("gvisor, the first runtime: %+v", r)
	}
	if r := byName["runtime-exec-true/microvm"]; r.VsRuntime == nil || r.VsRuntime.P50 <= 0 || r.VsRuntime.P99 <= 0 {
		t.Errorf("microvm's exec against gvisor's: %+v", r.VsRuntime)
	}
	if r := byName["runtime-ready/kata"]; !strings.Contains(r.Skipped, "not available on the daemon's host: no kata-runtime") {
		t.Errorf("kata skipped %q", r.Skipped)
	}
	if r := byName["runtime-ready/firecracker"]; !strings.Contains(r.Skipped, "does not offer runtime firecracker") {
		t.Errorf("firecracker skipped %q", r.Skipped)
	}
	if rep.Failed() {
		t.Error("a skipped runtime failed the run")
	}

	// Every create names its runtime and asks for the same shape; each
	// runtime's first sandbox, off the clock, is made once per run: ready
	// (1 + warm-up + runs), exec (1), idle memory (runs, then skipped).
	d.mu.Lock()
	perRuntime := map[string]int{}
	for _, req := range d.requests {
		perRuntime[req.Runtime]++
		if req.Image != opts.Image || req.MemoryMB != 0 {
			t.Errorf("create %+v, want image %s in the default shape (no warm pool)", req, opts.Image)
		}
	}
	d.mu.Unlock()
	wantCreates := 1 + opts.Warmup + opts.Runs + 1 + min(opts.Runs, runtimeIdleSandboxes)
	if want := map[string]int{"gvisor": wantCreates, "microvm": wantCreates}; !reflect.DeepEqual(perRuntime, want) {
		t.Errorf("creates per runtime %v, want %v", perRuntime, want)
	}

	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, wantLine := range []string{
		"- runtimes: gvisor (systrap, default), microvm (tcg), kata (unavailable: no kata-runtime on PATH)\n",
		"| scenario | runtime (mode) | n | p50 | p90 | p99 | min | p50 ÷ gvisor | p99 ÷ gvisor |",
		"| create→first exec (cold) | gvisor (systrap) | 3 | ",
		"| create→first exec (cold) | microvm (tcg) | 3 | ",
		"- create→first exec (cold), kata: runtime kata is not available",
	} {
		if !strings.Contains(md.String(), wantLine) {
			t.Errorf("report lacks %q:\n%s", wantLine, md.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, wantJSON := range []string{`"name":"runtime-ready/microvm","title":"create→first exec (cold)","latency":{"n":3,`,
		`"runtime":{"name":"microvm","mode":"tcg"},"vs_runtime":{"runtime":"gvisor","p50":`, `"runtimes":[{"name":"gvisor","mode":"systrap"`} {
		if !strings.Contains(string(b), wantJSON) {
			t.Errorf("JSON lacks %s:\n%s", wantJSON, b)
		}
	}
}

func TestRuntimeRow(t *testing.T) {
	mem := SummarizeSizes([]uint64{20 << 20, 22 << 20})
	res := Result{Title: "host memory per idle sandbox (PSS)", Memory: &mem, Runtime: &RuntimeRef{Name: "microvm", Mode: "kvm"},
		VsRuntime: &RuntimeRatio{Of: "gvisor", P50: 10.5, P99: 9.25}}
	want := "| host memory per idle sandbox (PSS) | microvm (kvm) | 2 | 21.0 MiB | 21.8 MiB | 22.0 MiB | 20.0 MiB | 10.50 | 9.25 |\n"
	if got := runtimeRow(res); got != want {
		t.Errorf("runtimeRow =\n%s\nwant\n%s", got, want)
	}
}

func TestOptionsValidateRuntimes(t *testing.T) {
	for _, tt := range []struct {
		runtimes []string
		wantErr  string
	}{
		{runtimes: []string{"gvisor", "microvm"}},
		{runtimes: []string{"gvisor", ""}, wantErr: "a runtime name must not be empty"},
		{runtimes: []string{"microvm", "gvisor", "microvm"}, wantErr: "runtime microvm is named twice"},
	} {
		o := validOptions()
		o.Runtimes = tt.runtimes
		err := o.Validate()
		if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Validate with runtimes %q = %v, want %q", tt.runtimes, err, tt.wantErr)
		}
	}
}
