package integration

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/telemetry/otlptest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Observability (issue 6, item 5): per-sandbox metrics from cgroups,
// Prometheus metrics, and OpenTelemetry spans exported over OTLP/HTTP.

func TestSandboxMetrics(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python", MemoryMB: 256})
	before, err := d.c.Metrics(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// Burn a second of CPU (CPU time, not wall time: the machine may be
	// busy) and keep 100 MiB resident in the background.
	d.setup(id, "python3", "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass")
	d.setup(id, "sh", "-c", `python3 -c "b = bytearray(100 << 20); import time; time.sleep(600)" >/dev/null 2>&1 &`)
	var after api.MetricsResponse
	if !testutil.Poll(time.Minute, func() bool {
		after, err = d.c.Metrics(ctx, id)
		return err == nil && after.MemoryBytes >= before.MemoryBytes+90<<20
	}) {
		t.Fatalf("memory did not grow by the 100 MiB held: before %+v, after %+v, %v", before, after, err)
	}
	t.Logf("metrics idle: %+v", before)
	t.Logf("metrics busy: %+v", after)
	if after.CPUSeconds < before.CPUSeconds+0.5 {
		t.Errorf("cpu_seconds %v → %v after a 1 s busy loop", before.CPUSeconds, after.CPUSeconds)
	}
	if after.MemoryLimitBytes != 256<<20 || after.CPUs != 1 || after.PidsLimit != 1024 {
		t.Errorf("limits: %+v", after)
	}
	if after.Pids < 10 || after.Pids > 1024 {
		t.Errorf("pids = %d, want the sandbox's host tasks", after.Pids)
	}
	if status, body := d.raw("GET", "/v1/sandboxes/"+id+"/metrics", "", ""); status != 200 || !strings.Contains(body, `"cpu_seconds"`) {
		t.Errorf("REST route: %d %s", status, body)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	_, err = d.c.Metrics(ctx, id)
	wantCode(t, err, "S004")
}

// metricValue finds the value of the sample with exactly these name and
// labels in a Prometheus text exposition, or -1.
func metricValue(text, sample string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}

func TestPrometheusMetrics(t *testing.T) {
	d := startDaemon(t, baseConfig("max_concurrent_sandboxes: 2\n"))
	ctx := context.Background()
	a := d.create(api.CreateRequest{Image: "python"})
	d.create(api.CreateRequest{Image: "python"})
	_, err := d.c.Create(ctx, api.CreateRequest{Image: "python"})
	wantCode(t, err, "S400")
	d.exec(a, "true")
	d.exec(a, "sh", "-c", "exit 3") // a normal result
	_, err = d.c.Exec(ctx, api.ExecRequest{SandboxID: a, Cmd: "sleep", Args: []string{"5"}, TimeoutMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.c.Exec(ctx, api.ExecRequest{SandboxID: "00000000-0000-4000-8000-000000000000", Cmd: "true"})
	wantCode(t, err, "S002")
	if _, err := d.c.Stop(ctx, a, true); err != nil {
		t.Fatal(err)
	}

	text := d.scrape("")
	tests := []struct {
		sample string
		check  func(v float64) bool
		want   string
	}{
		{"hutch_sandboxes_live", func(v float64) bool { return v == 1 }, "1"},
		{`hutch_sandbox_creates_total{result="ok"}`, func(v float64) bool { return v == 2 }, "2"},
		{`hutch_sandbox_creates_total{result="S400"}`, func(v float64) bool { return v == 1 }, "1"},
		{`hutch_sandbox_create_duration_seconds_count{result="ok"}`, func(v float64) bool { return v == 2 }, "2"},
		{`hutch_exec_duration_seconds_count{result="ok"}`, func(v float64) bool { return v == 2 }, "2"},
		{`hutch_exec_duration_seconds_count{result="timeout"}`, func(v float64) bool { return v == 1 }, "1"},
		{`hutch_exec_duration_seconds_count{result="S002"}`, func(v float64) bool { return v == 1 }, "1"},
		{`hutch_errors_total{code="S002",function="sandbox::exec"}`, func(v float64) bool { return v == 1 }, "1"},
		{`hutch_errors_total{code="S400",function="sandbox::create"}`, func(v float64) bool { return v == 1 }, "1"},
		{`hutch_sandbox_stops_total{cause="request"}`, func(v float64) bool { return v == 1 }, "1"},
		{"hutch_image_cache_bytes", func(v float64) bool { return v > 50<<20 }, "the python image's size"},
		{"go_goroutines", func(v float64) bool { return v > 0 }, "> 0"},
	}
	for _, tt := range tests {
		if v := metricValue(text, tt.sample); !tt.check(v) {
			t.Errorf("%s = %v, want %s", tt.sample, v, tt.want)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", grepLines(text, "hutch_"))
	}
}

func TestTracesExportedOverOTLP(t *testing.T) {
	rcv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})

	// An exec that carries a W3C traceparent continues the caller's trace.
	const callerTrace = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest("POST", d.url+"/v1/sandboxes/"+id+"/exec", strings.NewReader(`{"cmd":"sh","args":["-c","exit 4"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+callerTrace+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, err = d.c.Exec(context.Background(), api.ExecRequest{SandboxID: "00000000-0000-4000-8000-000000000000", Cmd: "true"})
	wantCode(t, err, "S002")

	create, ok := rcv.WaitFor("sandbox.create", map[string]string{"hutch.sandbox_id": id, "hutch.image": "python"}, 10*time.Second)
	if !ok {
		t.Fatalf("no sandbox.create span; got %+v", rcv.Spans())
	}
	if create.Resource["service.name"] != "hutch" {
		t.Errorf("resource %v lacks service.name hutch", create.Resource)
	}
	boot, ok := rcv.WaitFor("sandbox.boot", map[string]string{"hutch.sandbox_id": id, "hutch.runtime": "gvisor"}, 5*time.Second)
	if !ok || boot.Parent != create.SpanID || boot.TraceID != create.TraceID {
		t.Errorf("sandbox.boot span %+v is not a child of sandbox.create %+v", boot, create)
	}
	exec, ok := rcv.WaitFor("sandbox.exec", map[string]string{"hutch.sandbox_id": id, "hutch.exit_code": "4"}, 5*time.Second)
	if !ok {
		t.Fatalf("no sandbox.exec span with exit code 4; got %+v", rcv.Spans())
	}
	if exec.TraceID != callerTrace || exec.Parent != "b7ad6b7169203331" {
		t.Errorf("exec span in trace %s under %s, want the caller's trace", exec.TraceID, exec.Parent)
	}
	failed, ok := rcv.WaitFor("sandbox.exec", map[string]string{"hutch.error_code": "S002"}, 5*time.Second)
	if !ok || !failed.Error {
		t.Errorf("failed exec span: %+v (found %v)", failed, ok)
	}
}
