package functions

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Observer is told the outcome of every function call, whichever transport
// made it; internal/metrics implements it to count errors by S-code.
// Called runs on the request path and must be cheap.
type Observer interface {
	// Called reports that function id returned err (nil on success).
	Called(id string, err error)
}

func (t *Table) observe(id string, err error) {
	if t.deps.Observer != nil {
		t.deps.Observer.Called(id, err)
	}
}

// SandboxMetrics is per-sandbox resource use (Deps.Metrics, metricsvc):
// sandbox::metrics.
type SandboxMetrics interface {
	Metrics(ctx context.Context, req api.MetricsRequest) (api.MetricsResponse, error)
}

// registerMetrics adds sandbox::metrics and its stream when the table has
// Metrics.
func registerMetrics(t *Table) {
	m := t.deps.Metrics
	if m == nil {
		return
	}
	add(t, api.FnMetrics, "Resource use of a live sandbox from its cgroups: cpu, memory, pids (hutch extension)", m.Metrics)
	addStream(t, api.FnMetricsStream, "The metrics document of a sandbox every interval_ms until it stops or the caller goes away (hutch extension)",
		func(ctx context.Context, req api.MetricsStreamRequest, e Emitter) (struct{}, error) {
			return struct{}{}, streamMetrics(ctx, m, req, e)
		})
}

// streamMetrics emits req's sandbox's metrics every interval, the first
// at once, until the sandbox cannot answer (its error ends the stream:
// S004 once it stopped) or ctx ends.
func streamMetrics(ctx context.Context, m SandboxMetrics, req api.MetricsStreamRequest, e Emitter) error {
	every := time.Duration(req.IntervalMs) * time.Millisecond
	if req.IntervalMs == 0 {
		every = time.Second
	}
	if every < 100*time.Millisecond || every > time.Minute {
		return errdefs.Malformed("interval_ms must be between 100 and 60000, got %d", req.IntervalMs)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		doc, err := m.Metrics(ctx, api.MetricsRequest{SandboxID: req.SandboxID})
		if err != nil {
			return err
		}
		if err := e.Emit(Event{Type: api.EventMetrics, Data: doc}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
