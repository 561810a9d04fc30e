package metrics

import (
	"context"
	"fmt"
	"github.com/hutch-dev/hutch/api"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// scrape returns the text exposition of m.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestMetrics(t *testing.T) {
	live, cache := 3, int64(123456789)
	m := New(Sources{LiveSandboxes: func() int { return live }, ImageCacheBytes: func() int64 { return cache }})

	m.CreateDone("ok", 150*time.Millisecond)
	m.CreateDone("ok", 200*time.Millisecond)
	m.CreateDone("S400", time.Millisecond)
	m.ExecDone("ok", 8*time.Millisecond)
	m.ExecDone("timeout", 2*time.Second)
	m.Stopped("idle")
	m.Called(api.FnExec, nil)
	m.Called(api.FnExec, errdefs.New(errdefs.CodeExecBusy, "busy"))
	m.Called(api.FnExec, errdefs.New(errdefs.CodeExecBusy, "busy"))
	m.Called(api.FnCreate, fmt.Errorf("boot: %w", context.Canceled))

	out := scrape(t, m)
	for _, want := range []string{
		"hutch_sandboxes_live 3\n",
		"hutch_image_cache_bytes 1.23456789e+08\n",
		`hutch_sandbox_creates_total{result="ok"} 2` + "\n",
		`hutch_sandbox_creates_total{result="S400"} 1` + "\n",
		`hutch_sandbox_create_duration_seconds_bucket{result="ok",le="0.25"} 2` + "\n",
		`hutch_exec_duration_seconds_count{result="ok"} 1` + "\n",
		`hutch_exec_duration_seconds_bucket{result="timeout",le="1"} 0` + "\n",
		`hutch_exec_duration_seconds_bucket{result="timeout",le="2.5"} 1` + "\n",
		`hutch_sandbox_stops_total{cause="idle"} 1` + "\n",
		`hutch_errors_total{code="S003",function="sandbox::exec"} 2` + "\n",
		`hutch_errors_total{code="canceled",function="sandbox::create"} 1` + "\n",
		"go_goroutines ",
		"go_gc_heap_live_bytes ", // issue 38: the soak's heap figure
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if strings.Contains(out, `code="ok"`) {
		t.Error("successful calls counted as errors")
	}

	// Gauges are read at scrape time.
	live = 0
	if out := scrape(t, m); !strings.Contains(out, "hutch_sandboxes_live 0\n") {
		t.Error("hutch_sandboxes_live not re-read at scrape time")
	}
}

func TestMetricsWithoutSources(t *testing.T) {
	out := scrape(t, New(Sources{}))
	if strings.Contains(out, "hutch_sandboxes_live") || strings.Contains(out, "hutch_image_cache_bytes") {
		t.Errorf("gauges without a source are exported:\n%s", out)
	}
}
