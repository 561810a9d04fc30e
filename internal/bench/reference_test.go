package bench

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMeasureHost takes a real, short host reference: every figure has
// its runs, each a positive duration (how long they are is the bench's
// question, not this test's).
func TestMeasureHost(t *testing.T) {
	ref := measureHost(1, 3)
	if ref.Err != "" {
		t.Fatalf("measureHost: %s", ref.Err)
	}
	t.Logf("spawn p50 %v, pipe round trip p50 %v on one CPU, %v across two", ref.Spawn.P50, ref.PipeOneCPU.P50, ref.PipeTwoCPUs.P50)
	figures := map[string]Stats{"spawn": ref.Spawn, "pipe round trip on one CPU": ref.PipeOneCPU}
	if runtime.NumCPU() > 1 {
		figures["pipe round trip across two CPUs"] = ref.PipeTwoCPUs
	}
	for name, s := range figures {
		if len(s.Samples) != 3 {
			t.Errorf("%s: %d samples, want 3", name, len(s.Samples))
		}
		for _, d := range s.Samples {
			if d <= 0 {
				t.Errorf("%s: sample %v, want positive", name, d)
			}
		}
	}
}

func TestReferencePooled(t *testing.T) {
	ok := func(spawn ...float64) HostRef { return HostRef{Spawn: Summarize(msList(spawn...))} }
	spawn := func(h HostRef) Stats { return h.Spawn }
	tests := []struct {
		name    string
		ref     Reference
		wantN   int
		wantP50 time.Duration
	}{
		{name: "both moments", ref: Reference{Start: ok(1, 2), End: ok(3, 10)}, wantN: 4, wantP50: 2500 * time.Microsecond},
		{name: "a failed end has no samples", ref: Reference{Start: ok(1, 2), End: HostRef{Err: "no true"}}, wantN: 2, wantP50: 1500 * time.Microsecond},
		{name: "neither", ref: Reference{Start: HostRef{Err: "x"}, End: HostRef{Err: "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.ref.pooled(spawn)
			if len(got.Samples) != tt.wantN || got.P50 != tt.wantP50 {
				t.Errorf("pooled = %d samples, p50 %v; want %d, %v", len(got.Samples), got.P50, tt.wantN, tt.wantP50)
			}
		})
	}
}

func TestCompareWithHost(t *testing.T) {
	ref := &Reference{
		Start: HostRef{Spawn: Summarize(msList(1, 1)), PipeOneCPU: Summarize(msList(0.01, 0.01)), PipeTwoCPUs: Summarize(msList(0.1, 0.1))},
		End:   HostRef{Spawn: Summarize(msList(1, 1)), PipeOneCPU: Summarize(msList(0.01, 0.01))},
	}
	latency := func(name, title string, v float64) Result {
		s := Summarize(msList(v))
		return Result{Name: name, Title: title, Latency: &s}
	}
	execTrue := latency(NameExecTrue, "exec true (HTTP)", 8)
	execTrue.Baselines = []Result{latency(baselineDocker, "docker: exec true", 60), latency(baselineRunscDo, "runsc do", 100)}
	floor := latency(NameSpawnFloor, "spawn floor", 5)
	floor.Floor = &FloorPairs{Exec: Summarize(msList(8)), Added: Summarize(msList(3))}

	tests := []struct {
		name string
		rep  Report
		want []string // "title of: ratio"
	}{
		{
			name: "exec, its docker baseline, the floor and what hutch adds",
			rep:  Report{Reference: ref, Results: []Result{execTrue, floor, latency(NameCreateExec, "create", 150)}},
			want: []string{
				"exec true (HTTP) host spawn: 8.0",
				"exec true (HTTP) ↳ docker: exec true host spawn: 60.0",
				"spawn floor host spawn: 5.0",
				"added by hutch per exec (vs floor) pipe round trip on one CPU: 300.0",
				"added by hutch per exec (vs floor) pipe round trip across two CPUs: 30.0",
			},
		},
		{name: "no reference", rep: Report{Results: []Result{execTrue}}},
		{
			name: "a failed reference compares nothing",
			rep:  Report{Reference: &Reference{Start: HostRef{Err: "x"}, End: HostRef{Err: "y"}}, Results: []Result{execTrue}},
		},
		{
			name: "a failed scenario is not compared",
			rep:  Report{Reference: ref, Results: []Result{{Name: NameExecTrue, Title: "exec true (HTTP)", Err: "boom"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range tt.rep.compareWithHost() {
				got = append(got, fmt.Sprintf("%s %s: %.1f", v.Title, v.Of, v.Ratio))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("compareWithHost:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestReferenceJSON checks the report's JSON names the reference's figures
// at both moments, in milliseconds, and its ratios.
func TestReferenceJSON(t *testing.T) {
	one := HostRef{Spawn: Summarize(msList(0.5)), PipeOneCPU: Summarize(msList(0.005)), PipeTwoCPUs: Summarize(msList(0.03))}
	rep := Report{Host: Host{Load: "1.00", LoadEnd: "2.00"}, Reference: &Reference{Start: one, End: HostRef{Err: "no cat"}},
		VsHost: []HostRatio{{Name: NameExecTrue, Title: "exec true (HTTP)", Of: refSpawn, P50Ms: 5, RefP50Ms: 0.5, Ratio: 10}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"load_avg_1m":"1.00","load_avg_1m_end":"2.00"`,
		`"host_reference":{"start":{"spawn":{"n":1,"p50_ms":0.5`,
		`"pipe_round_trip_one_cpu":{"n":1,"p50_ms":0.005`,
		`"pipe_round_trip_two_cpus":{"n":1,"p50_ms":0.03`,
		`"end":{"spawn":{"n":0`,
		`"error":"no cat"`,
		`"vs_host":[{"name":"exec-true","title":"exec true (HTTP)","of":"host spawn","p50_ms":5,"ref_p50_ms":0.5,"ratio":10}]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
}
