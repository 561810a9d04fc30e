package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/hutch-dev/hutch/internal/metrics"
	"github.com/hutch-dev/hutch/internal/telemetry"
)

// tracingFlushTimeout bounds the export of the last spans at shutdown.
const tracingFlushTimeout = 5 * time.Second

// observability is the daemon's metrics and tracing.
type observability struct {
	metrics *metrics.Metrics
	// live and cacheBytes back the gauges; set once the manager and the
	// image store exist, before anything is served.
	live       func() int
	cacheBytes func() int64
	stopTraces func(context.Context) error
	log        *slog.Logger
}

// startObservability installs OpenTelemetry tracing when the environment
// asks for it (telemetry.Setup) and creates the Prometheus metrics.
func startObservability(ctx context.Context, log *slog.Logger) (*observability, error) {
	stop, err := telemetry.Setup(ctx, "", log)
	if err != nil {
		return nil, err
	}
	o := &observability{stopTraces: stop, log: log}
	o.metrics = metrics.New(metrics.Sources{
		LiveSandboxes:   func() int { return o.live() },
		ImageCacheBytes: func() int64 { return o.cacheBytes() },
	})
	return o, nil
}

// attach points the gauges at their sources.
func (o *observability) attach(live func() int, cacheBytes func() int64) {
	o.live, o.cacheBytes = live, cacheBytes
}

// handler serves GET /metrics.
func (o *observability) handler() http.Handler { return o.metrics.Handler() }

// close flushes the spans not yet exported.
func (o *observability) close() {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := o.stopTraces(ctx); err != nil {
		o.log.Warn("flushing traces", "err", err)
	}
}
