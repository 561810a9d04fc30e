package gvisor

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// spans makes the runtime's spans, children of the core's sandbox.boot
// (issue 46: where a boot's and a restore's time goes). They go through
// the global tracer provider: a no-op unless the daemon installed one.
var spans = otel.Tracer("github.com/hutch-dev/hutch/internal/runtime/gvisor")

// phase starts the span of one step of a start (gvisor.bundle,
// runsc.run, runsc.restore, gvisor.relink); the func it returns ends it
// with the step's error, once: later calls do nothing.
func phase(ctx context.Context, name string, attrs ...attribute.KeyValue) func(error) {
	_, span := spans.Start(ctx, name, trace.WithAttributes(attrs...))
	ended := false
	return func(err error) {
		if ended {
			return
		}
		ended = true
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// runscPhase names the span of the runsc command that starts a sandbox:
// runsc.restore from a checkpoint, runsc.run otherwise.
func runscPhase(checkpoint string) string {
	if checkpoint != "" {
		return "runsc.restore"
	}
	return "runsc.run"
}
