package api

// Alerts (hutch extensions): a condition on a sandbox's resource use that,
// held for a while, records an event and acts.

// Function ids of the alert functions.
const (
	FnAlertCreate  = "sandbox::alert::create"
	FnAlertList    = "sandbox::alert::list"
	FnAlertDelete  = "sandbox::alert::delete"
	FnAlertHistory = "sandbox::alert::history"
)

// EventAlertFired is the event of an alert that fired.
const EventAlertFired = "alert.fired"

// Alert metrics and actions.
const (
	// AlertCPU is CPU use in percent of one CPU, AlertMemory the working
	// set in MiB, AlertPids the sandbox's host tasks, AlertDisk the space
	// its writable layer takes in MiB.
	AlertCPU    = "cpu"
	AlertMemory = "memory"
	AlertPids   = "pids"
	AlertDisk   = "disk"

	AlertNotify = "notify"
	AlertPause  = "pause"
	AlertStop   = "stop"
)

// AlertCreateRequest is the payload of sandbox::alert::create.
type AlertCreateRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Metric is AlertCPU, AlertMemory, AlertPids or AlertDisk; Threshold is in its
	// unit, and the alert fires when the metric stays above it ForSecs.
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	ForSecs   uint64  `json:"for_secs,omitempty"`
	// Action is AlertNotify (an event only, the default), AlertPause or
	// AlertStop.
	Action string `json:"action,omitempty"`
}

// AlertInfo describes one alert.
type AlertInfo struct {
	AlertID   string  `json:"alert_id"`
	SandboxID string  `json:"sandbox_id"`
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	ForSecs   uint64  `json:"for_secs"`
	Action    string  `json:"action"`
	// Firing says the condition holds now and the alert fired.
	Firing bool `json:"firing"`
}

// AlertRequest names one alert.
type AlertRequest struct {
	AlertID string `json:"alert_id"`
}

// AlertListRequest is the payload of sandbox::alert::list and ::history:
// one sandbox's, or all of the caller's.
type AlertListRequest struct {
	SandboxID string `json:"sandbox_id,omitempty"`
}

// AlertListResponse is the result of sandbox::alert::list.
type AlertListResponse struct {
	Alerts []AlertInfo `json:"alerts"`
}

// AlertDeleteResponse is the result of sandbox::alert::delete.
type AlertDeleteResponse struct {
	AlertID string `json:"alert_id"`
	Deleted bool   `json:"deleted"`
}

func (r *AlertCreateRequest) SandboxIDField() *string { return &r.SandboxID }
