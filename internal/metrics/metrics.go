// Package metrics defines hutch's Prometheus metrics and serves them at
// GET /metrics. The sandbox manager and the function table report to it
// through their own narrow interfaces (sandbox.Observer,
// functions.Observer), so no Prometheus type appears in their APIs;
// gauges of state (live sandboxes, image cache size) are read at scrape
// time from the functions in Sources.
//
// Metrics:
//
//	hutch_sandboxes_live                       gauge     live sandboxes, every owner
//	hutch_sandbox_creates_total{result}        counter   creates by result: ok or an S-code
//	hutch_sandbox_create_duration_seconds      histogram create latency, by result
//	hutch_sandbox_stops_total{cause}           counter   stops: request, idle, out_of_memory, pids_limit, agent_failure, exited, shutdown
//	hutch_exec_duration_seconds{result}        histogram exec latency: ok, timeout or an S-code
//	hutch_errors_total{function,code}          counter   function calls that failed, by S-code
//	hutch_image_cache_bytes                    gauge     size of the images in the cache
//
// plus the daemon's runtime and capacity (daemon.go), the warm pool's (pool.go) and the Go runtime's and the process's
// standard collectors, with go_gc_heap_live_bytes (the heap the last GC
// found live).
package metrics

import (
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Sources are read at every scrape for the gauges; a nil one is left out.
type Sources struct {
	// LiveSandboxes counts the live sandboxes (sandbox.Manager.Live).
	LiveSandboxes func() int
	// ImageCacheBytes is the size of the image cache (image.Store.CacheBytes).
	ImageCacheBytes func() int64
}

// Metrics holds the daemon's metrics in a registry of its own.
type Metrics struct {
	reg           *prometheus.Registry
	creates       *prometheus.CounterVec
	createSeconds *prometheus.HistogramVec
	stops         *prometheus.CounterVec
	execSeconds   *prometheus.HistogramVec
	errors        *prometheus.CounterVec
}

var (
	_ sandbox.Observer   = (*Metrics)(nil)
	_ functions.Observer = (*Metrics)(nil)
)

// New registers the metrics, reading the gauges from src.
func New(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		creates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_sandbox_creates_total",
			Help: "Sandbox creates, by result: ok or the S-code of the error.",
		}, []string{"result"}),
		createSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hutch_sandbox_create_duration_seconds",
			Help:    "Time to create a sandbox (image ready to agent answering, plus any image build), by result.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"result"}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_sandbox_stops_total",
			Help: "Sandboxes stopped, by cause: request, idle, out_of_memory, pids_limit, agent_failure, exited, shutdown.",
		}, []string{"cause"}),
		execSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hutch_exec_duration_seconds",
			Help:    "Exec latency as the manager sees it, by result: ok (whatever the exit status), timeout, or the S-code of the error.",
			Buckets: []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_errors_total",
			Help: "Function calls that failed, by function id and S-code (canceled: the caller went away).",
		}, []string{"function", "code"}),
	}
	m.reg.MustRegister(m.creates, m.createSeconds, m.stops, m.execSeconds, m.errors,
		// issue 38: go_gc_heap_live_bytes, the heap the last GC marked
		// live, which the soak follows (RSS also holds garbage not yet
		// collected and memory not yet returned).
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if f := src.LiveSandboxes; f != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hutch_sandboxes_live",
			Help: "Live (not stopped) sandboxes of every owner.",
		}, func() float64 { return float64(f()) }))
	}
	if f := src.ImageCacheBytes; f != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hutch_image_cache_bytes",
			Help: "Apparent size of the root filesystems in the image cache.",
		}, func() float64 { return float64(f()) }))
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry the metrics live in, for tests and for callers
// that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// CreateDone implements sandbox.Observer.
func (m *Metrics) CreateDone(result string, took time.Duration) {
	m.creates.WithLabelValues(result).Inc()
	m.createSeconds.WithLabelValues(result).Observe(took.Seconds())
}

// ExecDone implements sandbox.Observer.
func (m *Metrics) ExecDone(result string, took time.Duration) {
	m.execSeconds.WithLabelValues(result).Observe(took.Seconds())
}

// Stopped implements sandbox.Observer.
func (m *Metrics) Stopped(cause string) {
	m.stops.WithLabelValues(cause).Inc()
}

// Called implements functions.Observer: it counts failed calls.
func (m *Metrics) Called(id string, err error) {
	if err == nil {
		return
	}
	m.errors.WithLabelValues(id, errdefs.Result(err)).Inc()
}
