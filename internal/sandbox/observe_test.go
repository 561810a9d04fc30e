package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/tracing"
)

var (
	recorderOnce sync.Once
	recorder     *tracetest.SpanRecorder
)

// spanRecorder installs, once per test binary, a tracer provider that
// records every span the manager makes through the global provider.
func spanRecorder() *tracetest.SpanRecorder {
	recorderOnce.Do(func() {
		recorder = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)))
	})
	return recorder
}

// lastSpan returns the attributes and status of the last ended span named name.
func lastSpan(t *testing.T, name string) (map[string]string, codes.Code) {
	t.Helper()
	spans := spanRecorder().Ended()
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].Name() != name {
			continue
		}
		attrs := map[string]string{}
		for _, kv := range spans[i].Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		return attrs, spans[i].Status().Code
	}
	t.Fatalf("no span %s among %d", name, len(spans))
	return nil, 0
}

func TestCreateAndExecAreObserved(t *testing.T) {
	spanRecorder()
	cfg := config.Default()
	cfg.MaxConcurrentSandboxes = 1
	m, obs := testManager(t, cfg)
	addSandbox(t, m, "00000000-0000-4000-8000-0000000000aa", 300, time.Now(), 0)
	ctx := context.Background()

	// At capacity, even an image outside the allowlist is S400: capacity
	// is checked first.
	_, err := m.Create(ctx, api.CreateRequest{Image: "ruby"})
	if !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Fatalf("create at capacity: %v, want S400", err)
	}
	attrs, status := lastSpan(t, "sandbox.create")
	if status != codes.Error || attrs["hutch.error_code"] != "S400" || attrs["hutch.image"] != "ruby" {
		t.Errorf("create span: %v %v", attrs, status)
	}

	const unknown = "00000000-0000-4000-8000-0000000000bb"
	_, err = m.Exec(ctx, api.ExecRequest{SandboxID: unknown, Cmd: "true"})
	if !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Fatalf("exec of an unknown id: %v", err)
	}
	attrs, status = lastSpan(t, "sandbox.exec")
	if status != codes.Error || attrs["hutch.error_code"] != "S002" || attrs["hutch.sandbox_id"] != unknown {
		t.Errorf("exec span: %v %v", attrs, status)
	}

	want := []string{"create:S400", "exec:S002"}
	if got := obs.list(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("observer got %v, want %v", got, want)
	}
}

func TestTraceExecResults(t *testing.T) {
	spanRecorder()
	three := 3
	tests := []struct {
		name   string
		resp   api.ExecResponse
		err    error
		result string
		attrs  map[string]string
	}{
		{"exit status", api.ExecResponse{ExitCode: &three, DurationMs: 12}, nil, "exec:ok",
			map[string]string{"hutch.exit_code": "3", "hutch.timed_out": "false", "hutch.duration_ms": "12"}},
		{"timeout", api.ExecResponse{TimedOut: true}, nil, "exec:timeout",
			map[string]string{"hutch.timed_out": "true"}},
		{"busy", api.ExecResponse{}, errdefs.New(errdefs.CodeExecBusy, "busy"), "exec:S003",
			map[string]string{"hutch.error_code": "S003"}},
		{"caller gone", api.ExecResponse{}, context.Canceled, "exec:canceled",
			map[string]string{"hutch.error_code": "canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, obs := testManager(t, config.Default())
			_, done := tracing.Exec(context.Background(), m.trace.obs, m.trace.emit, api.ExecRequest{SandboxID: "x"})
			done(tt.resp, tt.err)
			if got := obs.list(); len(got) != 1 || got[0] != tt.result {
				t.Errorf("observer got %v, want %s", got, tt.result)
			}
			attrs, _ := lastSpan(t, "sandbox.exec")
			for k, v := range tt.attrs {
				if attrs[k] != v {
					t.Errorf("span attribute %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
				}
			}
		})
	}
}
