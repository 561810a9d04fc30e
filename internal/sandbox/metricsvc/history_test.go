package metricsvc

import (
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestHistory: one sample per period, CPU percent from the sample before,
// a range answers what it covers, and the samples kept are bounded.
func TestHistory(t *testing.T) {
	var h histories
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	h.record(api.MetricsResponse{SandboxID: "a", CPUs: 2, CPUSeconds: 10}, at(-10), at(0)) // 10 s of 2 CPUs: 50 %
	h.record(api.MetricsResponse{SandboxID: "a", CPUs: 2, CPUSeconds: 11}, at(-10), at(1)) // same period: dropped
	h.record(api.MetricsResponse{SandboxID: "a", CPUs: 2, CPUSeconds: 20, MemoryBytes: 7}, at(-10), at(10))
	got := h.between("a", at(-100), time.Time{})
	if len(got) != 2 || got[0].CPUPercent != 50 || got[1].CPUPercent != 50 || got[1].MemoryBytes != 7 {
		t.Fatalf("samples %+v", got)
	}
	if got := h.between("a", at(5), at(10)); len(got) != 1 || got[0].Time != at(10).Format(time.RFC3339Nano) {
		t.Errorf("range 5..10: %+v", got)
	}
	if got := h.between("a", at(-3600), at(-1800)); len(got) != 0 {
		t.Errorf("a range before the sandbox: %+v", got)
	}
	for i := range api.MaxMetricsSamples + 10 {
		h.record(api.MetricsResponse{SandboxID: "b", CPUs: 1}, t0, at(api.MetricsSampleSecs*(i+1)))
	}
	if n := len(h.between("b", t0, time.Time{})); n != api.MaxMetricsSamples {
		t.Errorf("%d samples kept, want %d", n, api.MaxMetricsSamples)
	}
	for i := range maxHistories + 5 {
		h.record(api.MetricsResponse{SandboxID: string(rune('c' + i)), CPUs: 1}, t0, at(i))
	}
	if len(h.m) != maxHistories {
		t.Errorf("%d histories kept, want %d", len(h.m), maxHistories)
	}
	h.forget("b")
	if _, ok := h.m["b"]; ok {
		t.Error("a forgotten history is kept")
	}
}

func TestTimeRange(t *testing.T) {
	if _, _, err := timeRange(api.MetricsRequest{Start: "2026-01-01T00:00:00Z", End: "2026-01-01T00:00:01Z"}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []api.MetricsRequest{{Start: "now"}, {End: "x"}, {Start: "2026-01-02T00:00:00Z", End: "2026-01-01T00:00:00Z"}} {
		if _, _, err := timeRange(req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%+v: %v, want S001", req, err)
		}
	}
}
