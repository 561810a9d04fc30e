package sandbox

import "github.com/hutch-dev/hutch/internal/sandbox/tracing"

// Observer receives the core's measurements (package tracing).
type Observer = tracing.Observer

// tracer is what the core's spans and measurements report to (package
// tracing): obs receives the measurements (nil discards them) and emit
// records an exec's exec.finished event (nil records none).
type tracer struct {
	obs  Observer
	emit tracing.Emit
}
