package snapsvc

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// spans makes the service's spans: sandbox.fork and its
// sandbox.checkpoint, whose copies' boots are the core's sandbox.boot
// spans (issue 46: where a fork's time goes). A no-op unless the daemon
// installed a tracer provider (internal/telemetry).
var spans = otel.Tracer("github.com/hutch-dev/hutch/internal/sandbox/snapsvc")

// endSpan ends span with err's status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
