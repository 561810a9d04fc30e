// Package tracing traces and measures the core's creates, boots and
// execs: OpenTelemetry spans (through the global tracer provider, a no-op
// unless the daemon installed one, internal/telemetry), the Observer's
// measurements, and an exec's exec.finished event. It holds no state.
package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Observer receives the core's measurements. internal/metrics
// implements it for Prometheus, so the core's API carries no metrics
// library types. Methods are called synchronously on the request path and
// must be cheap and safe for concurrent use.
type Observer interface {
	// CreateDone reports a finished create: result is "ok" or the S-code
	// of its error ("canceled" when the caller went away).
	CreateDone(result string, took time.Duration)
	// ExecDone reports a finished exec: result is "ok" (the command ran,
	// whatever its exit status), "timeout", or the S-code of its error.
	ExecDone(result string, took time.Duration)
	// Stopped reports that an owner's sandbox stopped, with the cause of
	// its end (runtime.Cause: "request", "idle", "out_of_memory", ...).
	Stopped(cause string)
}

// Emit records an event of typ about sandbox id for owner.
type Emit func(typ, owner, id string, data any)

// nopObserver is the Observer of a core without metrics.
type nopObserver struct{}

func (nopObserver) CreateDone(string, time.Duration) {}
func (nopObserver) ExecDone(string, time.Duration)   {}
func (nopObserver) Stopped(string)                   {}

// Or is obs, or an Observer that discards everything when obs is nil.
func Or(obs Observer) Observer {
	if obs == nil {
		return nopObserver{}
	}
	return obs
}

// spans makes the core's spans; its scope keeps the core's name.
var spans = otel.Tracer("github.com/hutch-dev/hutch/internal/sandbox")

// Span attribute keys.
const (
	attrSandboxID = attribute.Key("hutch.sandbox_id")
	attrImage     = attribute.Key("hutch.image")
	attrCode      = attribute.Key("hutch.error_code")
)

// Create starts the span and clock of a create, measured by obs (nil:
// none). The returned func ends both; it takes the create's result.
func Create(ctx context.Context, obs Observer, req api.CreateRequest) (context.Context, func(api.CreateResponse, error)) {
	start := time.Now()
	ctx, span := spans.Start(ctx, "sandbox.create", trace.WithAttributes(
		attrImage.String(spec.Clip(req.Image, 128)),
		attribute.Bool("hutch.network", req.Network),
	))
	return ctx, func(resp api.CreateResponse, err error) {
		Or(obs).CreateDone(errdefs.Result(err), time.Since(start))
		if resp.SandboxID != "" {
			span.SetAttributes(attrSandboxID.String(resp.SandboxID))
		}
		endSpan(span, err)
	}
}

// Boot starts the "sandbox.boot" span of sandbox id's boot (runtime
// start, agent connection and the record, after the image is ready); the
// returned func ends it with the boot's error.
func Boot(ctx context.Context, id, runtime string, cpus, memoryMB uint32) (context.Context, func(error)) {
	ctx, span := spans.Start(ctx, "sandbox.boot", trace.WithAttributes(
		attrSandboxID.String(id),
		attribute.String("hutch.runtime", runtime),
		attribute.Int64("hutch.cpus", int64(cpus)),
		attribute.Int64("hutch.memory_mb", int64(memoryMB)),
	))
	return ctx, func(err error) { endSpan(span, err) }
}

// Exec starts the span and clock of an exec, measured by obs (nil: none).
// The returned func ends both; it takes the exec's result and, unless
// emit is nil, records its exec.finished event.
func Exec(ctx context.Context, obs Observer, emit Emit, req api.ExecRequest) (context.Context, func(api.ExecResponse, error)) {
	start := time.Now()
	ctx, span := spans.Start(ctx, "sandbox.exec", trace.WithAttributes(attrSandboxID.String(spec.Clip(req.SandboxID, 64))))
	return ctx, func(resp api.ExecResponse, err error) {
		result := errdefs.Result(err)
		if err == nil {
			if resp.TimedOut {
				result = "timeout"
			}
			span.SetAttributes(
				attribute.Bool("hutch.timed_out", resp.TimedOut),
				attribute.Int64("hutch.duration_ms", int64(resp.DurationMs)),
			)
			if resp.ExitCode != nil {
				span.SetAttributes(attribute.Int("hutch.exit_code", *resp.ExitCode))
			}
		}
		Or(obs).ExecDone(result, time.Since(start))
		if emit != nil && (err == nil || errdefs.Is(err, errdefs.CodeExecTimeout)) {
			emit(api.EventExecFinished, auth.OwnerFrom(ctx), req.SandboxID, map[string]any{
				"exit_code": resp.ExitCode, "timed_out": resp.TimedOut || err != nil,
				"oom_killed": resp.OOMKilled, "duration_ms": resp.DurationMs})
		}
		endSpan(span, err)
	}
}

// endSpan records err, if any, on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attrCode.String(errdefs.Result(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
