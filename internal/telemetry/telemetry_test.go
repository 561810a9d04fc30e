package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"

	"github.com/hutch-dev/hutch/internal/telemetry/otlptest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// restoreGlobals puts otel's global provider and propagator back after t.
func restoreGlobals(t *testing.T) {
	tp, prop := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(prop)
	})
}

func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	restoreGlobals(t)
	rcv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	shutdown, err := Setup(context.Background(), "v9.9.9", discard)
	if err != nil {
		t.Fatal(err)
	}

	// A caller's traceparent continues into the daemon's spans.
	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	hdr := http.Header{"Traceparent": {"00-" + parentTrace + "-00f067aa0ba902b7-01"}}
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), propagation.HeaderCarrier(hdr))
	_, span := otel.Tracer("test").Start(ctx, "sandbox.create")
	span.SetAttributes(attribute.String("hutch.sandbox_id", "abc"))
	span.End()

	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s, ok := rcv.WaitFor("sandbox.create", map[string]string{"hutch.sandbox_id": "abc"}, 5*time.Second)
	if !ok {
		t.Fatalf("span not received; got %+v", rcv.Spans())
	}
	if s.TraceID != parentTrace || s.Parent != "00f067aa0ba902b7" {
		t.Errorf("span trace %s parent %s, want the caller's trace", s.TraceID, s.Parent)
	}
	for k, want := range map[string]string{"service.name": "hutch", "service.version": "v9.9.9", "deployment.environment": "test"} {
		if s.Resource[k] != want {
			t.Errorf("resource %s = %q, want %q", k, s.Resource[k], want)
		}
	}
}

func TestSetupDisabled(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"no endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ""}},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restoreGlobals(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			before := otel.GetTracerProvider()
			shutdown, err := Setup(context.Background(), "dev", discard)
			if err != nil {
				t.Fatal(err)
			}
			if otel.GetTracerProvider() != before {
				t.Error("a tracer provider was installed")
			}
			if err := shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}
