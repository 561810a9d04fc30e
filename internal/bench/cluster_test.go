package bench

import (
	"strings"
	"testing"
	"time"
)

// TestClusterTargets: each target is met or missed by what was measured,
// and one that was not measured is never met.
func TestClusterTargets(t *testing.T) {
	lat := func(p50 time.Duration) *Stats { s := Summarize([]time.Duration{p50}); return &s }
	rep := ClusterReport{
		Single: Report{Results: []Result{
			{Name: NameCreateExec, Latency: lat(1000 * time.Millisecond)},
			{Name: NamePoolCreateExec, Latency: lat(100 * time.Millisecond)},
		}},
		PodCold:         Result{Latency: lat(1400 * time.Millisecond)},
		PodPool:         Result{Latency: lat(250 * time.Millisecond)},
		Spread:          Spread{Pods: 100, Running: 100, PerNode: map[string]int{"a": 34, "b": 33, "c": 33}, Worst: 0.02},
		Lost:            Lost{Node: "c", Pods: 33, Seconds: 40, Limit: 33},
		ControlPlaneMiB: 600,
	}
	rep.Targets = rep.targets(23 * time.Second)
	got := map[string]bool{}
	for _, tg := range rep.Targets {
		got[strings.Fields(tg.Name)[0]+" "+strings.Fields(tg.Name)[1]] = tg.Met
	}
	want := map[string]bool{
		"Pod created":   true,  // 1.4×
		"warm pool:":    false, // 150 ms added
		"100 Pods":      true,
		"a dead":        false, // 40 s > 33 s
		"control plane": true,
	}
	for k, w := range want {
		if m, ok := got[k]; !ok || m != w {
			t.Errorf("target %q met %v (listed %v), want %v", k, m, ok, w)
		}
	}
	if !rep.Failed() {
		t.Error("a report with missed targets is not Failed")
	}

	// Nothing measured: nothing met.
	for _, tg := range (ClusterReport{Spread: Spread{Err: "boom"}, Lost: Lost{Err: "boom"}}).targets(time.Second) {
		if tg.Met {
			t.Errorf("target %q met without a measurement (%s)", tg.Name, tg.Got)
		}
	}
}
