package metricsvc

// Metrics histories: each read of a sandbox's metrics, the sampler's
// (sampler.go) included, is also a sample, kept per sandbox (one per
// api.MetricsSampleSecs, the last api.MaxMetricsSamples), so that a caller can ask for the samples of a
// time range, as E2B's metrics API answers.

import (
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxHistories bounds the sandboxes whose samples are kept; past it the
// least recently sampled one's are dropped.
const maxHistories = 512

// sample is one kept sample, with the CPU seconds it was computed from.
type sample struct {
	at         time.Time
	cpuSeconds float64
	out        api.MetricsSample
}

// histories are the kept samples of every sandbox.
type histories struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string][]sample
}

// record keeps m, read at now, as a sample of its sandbox, unless the last
// sample is less than api.MetricsSampleSecs old.
func (h *histories) record(m api.MetricsResponse, created, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string][]sample{}
	}
	kept := h.m[m.SandboxID]
	if kept == nil && len(h.m) >= maxHistories {
		h.evictLocked()
	}
	prevAt, prevCPU := created, 0.0
	if n := len(kept); n > 0 {
		if now.Sub(kept[n-1].at) < api.MetricsSampleSecs*time.Second {
			return // this period has its sample
		}
		prevAt, prevCPU = kept[n-1].at, kept[n-1].cpuSeconds
	}
	pct := 0.0
	if secs := now.Sub(prevAt).Seconds(); secs > 0 && m.CPUs > 0 {
		pct = min(max(100*(m.CPUSeconds-prevCPU)/secs/float64(m.CPUs), 0), 100)
	}
	s := sample{at: now, cpuSeconds: m.CPUSeconds, out: api.MetricsSample{Time: now.UTC().Format(time.RFC3339Nano),
		CPUPercent: pct, MemoryBytes: m.MemoryBytes, DiskBytes: m.DiskBytes}}
	kept = append(kept, s)
	if len(kept) > api.MaxMetricsSamples {
		kept = append(kept[:0:0], kept[len(kept)-api.MaxMetricsSamples:]...)
	}
	h.m[m.SandboxID] = kept
}

// evictLocked drops the history sampled least recently.
func (h *histories) evictLocked() {
	var oldest string
	var at time.Time
	for id, kept := range h.m {
		if last := kept[len(kept)-1].at; oldest == "" || last.Before(at) {
			oldest, at = id, last
		}
	}
	delete(h.m, oldest)
}

// between are the samples of sandbox id taken from start to end, both
// included; a zero end is now.
func (h *histories) between(id string, start, end time.Time) []api.MetricsSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []api.MetricsSample{}
	for _, s := range h.m[id] {
		if !s.at.Before(start) && (end.IsZero() || !s.at.After(end)) {
			out = append(out, s.out)
		}
	}
	return out
}

// forget drops the samples of a sandbox that is gone.
func (h *histories) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, id)
}

// timeRange reads a request's start and end: S001 when either is not RFC
// 3339 or end is before start.
func timeRange(req api.MetricsRequest) (start, end time.Time, err error) {
	for _, f := range []struct {
		name, v string
		t       *time.Time
	}{{"start", req.Start, &start}, {"end", req.End, &end}} {
		if f.v == "" {
			continue
		}
		if *f.t, err = time.Parse(time.RFC3339Nano, f.v); err != nil {
			return start, end, errdefs.Malformed("%s %q is not an RFC 3339 time", f.name, spec.Clip(f.v, 64))
		}
	}
	if !end.IsZero() && end.Before(start) {
		return start, end, errdefs.Malformed("end %s is before start %s", req.End, req.Start)
	}
	return start, end, nil
}
