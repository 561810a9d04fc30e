package api

// Queued jobs (hutch extensions): an exec that hutch runs for its caller
// in order, retries when the infrastructure failed it, and keeps a
// dead-letter list of those it gave up on.

// Function ids of the job functions.
const (
	FnJobSubmit = "sandbox::job::submit"
	FnJobGet    = "sandbox::job::get"
	FnJobList   = "sandbox::job::list"
	FnJobCancel = "sandbox::job::cancel"
	// FnJobDLQ lists the dead-letter list: the jobs given up on.
	FnJobDLQ = "sandbox::job::dlq"
	// FnJobRetry queues a job of the dead-letter list again.
	FnJobRetry = "sandbox::job::retry"
)

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded" // exited 0
	JobFailed    = "failed"    // exited non-zero (or timed out), not retried
	JobDead      = "dead"      // given up on: in the dead-letter list
	JobCancelled = "cancelled"
)

// Job event types.
const (
	EventJobQueued   = "job.queued"
	EventJobStarted  = "job.started"
	EventJobRetrying = "job.retrying"
	EventJobFinished = "job.finished"
)

// JobSubmitRequest is the payload of sandbox::job::submit: an exec, run
// in sandbox_id, or in a sandbox created for it (image, template, or the
// whole create request) and stopped after it.
type JobSubmitRequest struct {
	SandboxID string         `json:"sandbox_id,omitempty"`
	Image     string         `json:"image,omitempty"`
	Template  string         `json:"template,omitempty"`
	Create    *CreateRequest `json:"create,omitempty"`

	Cmd       string   `json:"cmd,omitempty"`
	Args      []string `json:"args,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Env       Env      `json:"env,omitempty"`
	Workdir   string   `json:"workdir,omitempty"`
	TimeoutMs uint64   `json:"timeout_ms,omitempty"`

	// MaxRetries is how many times a failed attempt is tried again
	// (default 3, at most 10); RetryOnExit retries a non-zero exit or a
	// timeout too, not only a failure of the infrastructure.
	MaxRetries  *int `json:"max_retries,omitempty"`
	RetryOnExit bool `json:"retry_on_exit,omitempty"`
}

// JobInfo describes a job.
type JobInfo struct {
	JobID string `json:"job_id"`
	State string `json:"state"`
	// SandboxID is the sandbox it runs in (the one created for its
	// latest attempt, for a job that creates its own).
	SandboxID string           `json:"sandbox_id,omitempty"`
	Request   JobSubmitRequest `json:"request"`
	// Attempts counts the attempts begun; a daemon restart during one
	// does not count it.
	Attempts      int    `json:"attempts"`
	SubmittedAt   string `json:"submitted_at"`
	StartedAt     string `json:"started_at,omitempty"`
	EndedAt       string `json:"ended_at,omitempty"`
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	// Result is the last attempt's exec result (output capped at 64 KiB
	// a stream).
	Result *ExecResponse `json:"result,omitempty"`
	// Error is why the last attempt failed, when it did not run to an
	// exit.
	Error *ErrorEnvelope `json:"error,omitempty"`
}

// JobRequest names a job.
type JobRequest struct {
	JobID string `json:"job_id"`
}

// JobListRequest is the payload of sandbox::job::list and ::dlq.
type JobListRequest struct {
	State     string `json:"state,omitempty"`
	SandboxID string `json:"sandbox_id,omitempty"`
	// Limit bounds the answer (default and most 1000), newest first.
	Limit int `json:"limit,omitempty"`
}

// JobListResponse is the result of sandbox::job::list and ::dlq.
type JobListResponse struct {
	Jobs []JobInfo `json:"jobs"`
}
