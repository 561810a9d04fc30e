package api

// State: pause, resume and lifetimes (hutch extensions beyond the seeds'
// contract).

// Function ids of the state functions.
const (
	FnPause      = "sandbox::pause"
	FnResume     = "sandbox::resume"
	FnSetTimeout = "sandbox::set_timeout"
)

// Depths of a pause (PauseRequest.Depth).
const (
	// PauseFreeze stops the sandbox's CPU use and keeps its memory: a
	// resume takes milliseconds.
	PauseFreeze = "freeze"
	// PauseHibernate writes the sandbox's memory, processes and writable
	// layer to disk and ends its host processes: it holds no memory while
	// paused, and a resume restores it.
	PauseHibernate = "hibernate"
	// PauseFiles keeps the sandbox's files (its writable layer) and drops
	// its memory and processes: a resume boots it again on its files, as
	// E2B's filesystem-only pause (keepMemory: false) does.
	PauseFiles = "files"
)

// PauseRequest is the payload of sandbox::pause.
type PauseRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Depth is PauseFreeze (the default), PauseHibernate or PauseFiles.
	Depth string `json:"depth,omitempty"`
}

// ResumeRequest is the payload of sandbox::resume.
type ResumeRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// StateResponse is the result of sandbox::pause and sandbox::resume: the
// state the sandbox is in once the call is over.
type StateResponse struct {
	SandboxID string `json:"sandbox_id"`
	State     string `json:"state"`
	// Changed is false when the sandbox already was in that state.
	Changed bool `json:"changed"`
}

// SetTimeoutRequest is the payload of sandbox::set_timeout: the sandbox
// ends TimeoutSecs from now, whatever its activity (E2B's setTimeout).
type SetTimeoutRequest struct {
	SandboxID   string `json:"sandbox_id"`
	TimeoutSecs uint64 `json:"timeout_secs"`
}

// SetTimeoutResponse is the result of sandbox::set_timeout.
type SetTimeoutResponse struct {
	SandboxID string `json:"sandbox_id"`
	// ExpiresAt is when the sandbox will be stopped (RFC 3339).
	ExpiresAt string `json:"expires_at"`
}

func (r *PauseRequest) SandboxIDField() *string      { return &r.SandboxID }
func (r *ResumeRequest) SandboxIDField() *string     { return &r.SandboxID }
func (r *SetTimeoutRequest) SandboxIDField() *string { return &r.SandboxID }
