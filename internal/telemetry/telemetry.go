// Package telemetry installs hutch's OpenTelemetry tracing. Tracing is off
// unless the standard environment asks for it: with
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
// Setup installs a tracer provider that batches spans to that collector
// over OTLP/HTTP (protobuf), and the W3C traceparent propagator, so that a
// caller's trace continues into the daemon. The exporter honours the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS), the batcher the
// OTEL_BSP_* ones, and the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES; OTEL_SDK_DISABLED=true turns tracing off.
//
// The spans themselves are made where the work happens (the sandbox
// manager's sandbox.create, sandbox.boot and sandbox.exec) through the
// global provider, which stays a no-op when Setup did not install one.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name of hutch's spans unless OTEL_SERVICE_NAME
// says otherwise.
const ServiceName = "hutch"

// Enabled reports whether the environment asks for trace export.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the global tracer provider and propagator when Enabled,
// naming the service version ("" takes the build's), and returns a func that flushes and stops them (a no-op otherwise).
// Export failures are logged to log, never returned to requests.
func Setup(ctx context.Context, version string, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		log.Warn("OTEL_EXPORTER_OTLP_PROTOCOL is not supported; exporting with http/protobuf", "protocol", p)
	}
	if version == "" {
		version = buildVersion()
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version),
		),
		// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.Environment(),
	)
	if err != nil {
		return nil, fmt.Errorf("building the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", "err", err)
	}))
	log.Info("exporting traces over OTLP/HTTP", "endpoint", endpoint())
	return tp.Shutdown, nil
}

// buildVersion is the main module's version from the build, or "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// endpoint is the configured collector address, for the log.
func endpoint() string {
	if e := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return e
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}
