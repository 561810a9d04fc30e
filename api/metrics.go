package api

// MetricsRequest is the payload of sandbox::metrics (hutch extension).
type MetricsRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Start and End (RFC 3339), when either is set, ask for the samples
	// kept of the sandbox between them (MetricsResponse.Samples). hutch
	// samples every live sandbox each MetricsSampleSecs, and whenever its
	// metrics are read, at most one per period, and keeps the last
	// MaxMetricsSamples.
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// The sampling of metrics histories (MetricsRequest.Start).
const (
	MetricsSampleSecs = 5
	MaxMetricsSamples = 360
)

// MetricsSample is one sample of a sandbox's resource use.
type MetricsSample struct {
	// Time is when it was taken (RFC 3339).
	Time string `json:"time"`
	// CPUPercent is the CPU used since the sample before (since the
	// start for the first), in percent of the sandbox's CPUs.
	CPUPercent  float64 `json:"cpu_percent"`
	MemoryBytes uint64  `json:"memory_bytes"`
	DiskBytes   uint64  `json:"disk_bytes"`
}

// MetricsResponse is a live sandbox's resource use, read from its cgroups
// (GET /v1/sandboxes/{id}/metrics).
type MetricsResponse struct {
	SandboxID string `json:"sandbox_id"`
	// CPUSeconds is the CPU time the sandbox has used since it started.
	CPUSeconds float64 `json:"cpu_seconds"`
	// MemoryBytes is its working set: memory in use minus inactive file
	// cache, as docker stats reports it.
	MemoryBytes uint64 `json:"memory_bytes"`
	// MemoryLimitBytes is its memory limit (memory_mb).
	MemoryLimitBytes uint64 `json:"memory_limit_bytes"`
	// Pids counts the host tasks of the sandbox (the gVisor kernel's
	// threads and one or two per process inside), against PidsLimit.
	Pids      uint64 `json:"pids"`
	PidsLimit int64  `json:"pids_limit"`
	CPUs      uint32 `json:"cpus"`
	AgeSecs   uint64 `json:"age_secs"`
	// IdleSecs is the time since the last exec or file operation.
	IdleSecs uint64 `json:"idle_secs"`
	// DiskBytes is the space its writable layer (the files it wrote
	// outside tmpfs mounts such as /tmp) takes, against DiskLimitBytes
	// (writable_layer_mb; 0 when unlimited).
	DiskBytes      uint64 `json:"disk_bytes"`
	DiskLimitBytes uint64 `json:"disk_limit_bytes"`
	// ExecInFlight is the number of execs running now.
	ExecInFlight int `json:"exec_in_flight"`
	// Samples are the samples between the request's Start and End,
	// oldest first (only when it gives either).
	Samples []MetricsSample `json:"samples,omitempty"`
}

// FnMetricsStream streams a sandbox's metrics document (hutch extension).
const FnMetricsStream = "sandbox::metrics::stream"

// EventMetrics is the type of each event of a metrics stream: a
// MetricsResponse.
const EventMetrics = "metrics"

// MetricsStreamRequest is the payload of sandbox::metrics::stream.
type MetricsStreamRequest struct {
	SandboxID string `json:"sandbox_id"`
	// IntervalMs is the time between two documents: 100 to 60000, default
	// 1000.
	IntervalMs uint64 `json:"interval_ms,omitempty"`
}

func (r *MetricsStreamRequest) SandboxIDField() *string { return &r.SandboxID }

// CPUPercent is the sandbox's average CPU use since it started, in
// percent of its CPUs (issue 40: envd's /metrics).
func (m MetricsResponse) CPUPercent() float64 {
	if m.AgeSecs == 0 || m.CPUs == 0 {
		return 0
	}
	return 100 * m.CPUSeconds / float64(m.AgeSecs) / float64(m.CPUs)
}
