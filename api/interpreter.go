package api

// The code interpreter (hutch extensions): contexts are interpreters that
// live in a sandbox and keep their state across the cells run in them.

// Function ids of the interpreter.
const (
	FnContextCreate  = "sandbox::interpreter::context::create"
	FnContextList    = "sandbox::interpreter::context::list"
	FnContextRestart = "sandbox::interpreter::context::restart"
	FnContextDelete  = "sandbox::interpreter::context::delete"
	FnRunCode        = "sandbox::interpreter::run"
	FnInterrupt      = "sandbox::interpreter::interrupt"
	FnInstall        = "sandbox::interpreter::install"
)

// ContextCreateRequest is the payload of
// sandbox::interpreter::context::create.
type ContextCreateRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Language is python (the default), javascript, typescript or bash.
	Language string `json:"language,omitempty"`
	// Cwd is where the interpreter starts (the image's working directory
	// by default); Env is added to the sandbox's environment.
	Cwd string `json:"cwd,omitempty"`
	Env Env    `json:"env,omitempty"`
}

// Context states.
const (
	ContextIdle = "idle"
	ContextBusy = "busy"
	ContextDead = "dead"
)

// ContextInfo describes a context.
type ContextInfo struct {
	ContextID string `json:"context_id"`
	SandboxID string `json:"sandbox_id"`
	Language  string `json:"language"`
	Cwd       string `json:"cwd,omitempty"`
	// Pid is its interpreter's process (a background process of the
	// sandbox, tagged interpreter:<context_id>).
	Pid int `json:"pid"`
	// State is idle, busy (running a cell) or dead (its interpreter
	// exited: restart it); Reason says why it died.
	State          string `json:"state"`
	Reason         string `json:"reason,omitempty"`
	ExecutionCount int    `json:"execution_count"`
	// Default says it is the language's default context of the sandbox.
	Default bool `json:"default,omitempty"`
}

// ContextRequest names a context.
type ContextRequest struct {
	ContextID string `json:"context_id"`
}

// ContextListRequest is the payload of sandbox::interpreter::context::list.
type ContextListRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// ContextListResponse is the result of sandbox::interpreter::context::list.
type ContextListResponse struct {
	Contexts []ContextInfo `json:"contexts"`
}

// RunCodeRequest is the payload of sandbox::interpreter::run: code run in
// context_id, or in the sandbox's default context of language (python by
// default), created on first use.
type RunCodeRequest struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	Language  string `json:"language,omitempty"`
	Code      string `json:"code"`
	// TimeoutMs interrupts the cell after this long (the daemon's exec
	// default and maximum apply).
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
	// Env are variables set for this cell only: the context's own are
	// back once it ends (issue 40).
	Env Env `json:"env,omitempty"`
}

// CellError is what a cell raised.
type CellError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// CellResult is the final value of sandbox::interpreter::run; the cell's
// output came before it as stdout and stderr events (OutputChunk).
type CellResult struct {
	ContextID      string `json:"context_id"`
	ExecutionCount int    `json:"execution_count"`
	// Status is "ok" or "error".
	Status string `json:"status"`
	// Data is the value of the cell's last expression by MIME type, as a
	// notebook shows it: text/plain always, and image/png (base64),
	// image/svg+xml, text/html, text/markdown, application/json,
	// text/latex when the value offers them.
	Data map[string]any `json:"data,omitempty"`
	// Display are the other outputs the cell displayed, each by MIME
	// type: every matplotlib figure it made, as image/png.
	Display []map[string]any `json:"display,omitempty"`
	Error   *CellError       `json:"error,omitempty"`
	// ExitCode is a bash cell's status.
	ExitCode   *int   `json:"exit_code,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMs uint64 `json:"duration_ms"`
}

// InterruptResponse is the result of sandbox::interpreter::interrupt.
type InterruptResponse struct {
	ContextID string `json:"context_id"`
	// Running says a cell was running when the interrupt was sent.
	Running bool `json:"running"`
}

// InstallRequest is the payload of sandbox::interpreter::install.
type InstallRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Manager is pip or npm.
	Manager  string   `json:"manager"`
	Packages []string `json:"packages"`
}

func (r *ContextCreateRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ContextListRequest) SandboxIDField() *string   { return &r.SandboxID }
func (r *RunCodeRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *InstallRequest) SandboxIDField() *string       { return &r.SandboxID }
