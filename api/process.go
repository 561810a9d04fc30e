package api

// Processes: sandbox::process::* and the streamed exec (hutch extensions
// beyond the seeds' contract). A process started with sandbox::process::start
// outlives its caller; it is addressed by the pid the sandbox gave it.

// Function ids of the process functions and of the streamed exec:
// sandbox::exec's payload, answered with its output as it is written
// (events start, stdout, stderr, exit), not capped by max_output_bytes.
const (
	FnExecStream    = "sandbox::exec::stream"
	FnProcessStart  = "sandbox::process::start"
	FnProcessGet    = "sandbox::process::get"
	FnProcessList   = "sandbox::process::list"
	FnProcessOutput = "sandbox::process::output"
	FnProcessStdin  = "sandbox::process::stdin"
	FnProcessSignal = "sandbox::process::signal"
	FnProcessKill   = "sandbox::process::kill"
	FnProcessWait   = "sandbox::process::wait"
	FnProcessResize = "sandbox::process::resize"
	// FnProcessLogs streams the combined output of a sandbox's background
	// processes (hutch extension).
	FnProcessLogs = "sandbox::process::logs"
	// FnProcessStartStream starts a background process and streams its
	// output until it exits (issue 40: start and follow in one call).
	FnProcessStartStream = "sandbox::process::start::stream"
)

// LoginShell is the argv of the login shell /etc/passwd gives the
// process's user (/bin/sh when there is none): what a terminal runs when
// no command is given, and what `hutch shell` runs without one.
var LoginShell = []string{"/bin/sh", "-c",
	`s=$(awk -F: -v u="$(id -u)" '$3==u{print $7; exit}' /etc/passwd 2>/dev/null); [ -x "$s" ] || s=/bin/sh; exec "$s" -l`}

// Event types of a process's output stream: a streamed exec
// (sandbox::exec::stream) and sandbox::process::output with follow.
const (
	// EventStart comes first and carries a ProcessStartResponse: the pid,
	// by which the process can be signalled or killed while it streams.
	EventStart = "start"
	// EventStdout and EventStderr carry an OutputChunk.
	EventStdout = "stdout"
	EventStderr = "stderr"
	// EventExit carries the process's end: an ExecResponse (without
	// output) for a streamed exec, a ProcessInfo for a followed process.
	EventExit = "exit"
)

// OutputChunk is one piece of a process's stdout or stderr, as written.
type OutputChunk struct {
	// Data is the bytes as UTF-8 text, or in base64 when Base64 is set
	// (a chunk that is not valid UTF-8).
	Data   string `json:"data"`
	Base64 bool   `json:"base64,omitempty"`
	// Offset is the stream's byte offset of the chunk's first byte.
	Offset int64 `json:"offset"`
	// Dropped is how many bytes before the chunk were lost: the process's
	// ring buffer no longer held them.
	Dropped int64 `json:"dropped,omitempty"`
}

// PtySize is a terminal's size in characters.
type PtySize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// WorkdirHome as a workdir of an exec or process, alone or before "/sub",
// is the home directory of the user the command runs as: its entry in the
// sandbox's /etc/passwd when the command starts, else its env's HOME
// (issue 40).
const WorkdirHome = "~"

// ProcessStartRequest is the payload of sandbox::process::start. Cmd,
// Args, Argv, Env and Workdir are as in ExecRequest.
type ProcessStartRequest struct {
	SandboxID string   `json:"sandbox_id"`
	Cmd       string   `json:"cmd,omitempty"`
	Args      []string `json:"args,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Env       Env      `json:"env,omitempty"`
	Workdir   string   `json:"workdir,omitempty"`
	// User runs the process as this user of the sandbox (a name or uid)
	// instead of the image's.
	User string `json:"user,omitempty"`
	// Stdin keeps the process's stdin open for sandbox::process::stdin;
	// otherwise it reads EOF at once.
	Stdin bool `json:"stdin,omitempty"`
	// Pty runs the process on a terminal of this size (stdin open, stdout
	// and stderr merged into stdout).
	Pty *PtySize `json:"pty,omitempty"`
	// Tag is the caller's free-form label, shown by get and list.
	Tag string `json:"tag,omitempty"`
	// TimeoutMs kills the process after this long; 0 means never.
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
}

// ProcessStartResponse is the result of sandbox::process::start.
type ProcessStartResponse struct {
	Pid int `json:"pid"`
}

// ProcessRequest names one process: the payload of sandbox::process::get
// and sandbox::process::kill.
type ProcessRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
}

// Process states.
const (
	ProcessRunning = "running"
	ProcessExited  = "exited"
)

// ProcessInfo describes a process hutch started: the result of
// sandbox::process::get and sandbox::process::wait.
type ProcessInfo struct {
	Pid  int      `json:"pid"`
	Argv []string `json:"argv"`
	Tag  string   `json:"tag,omitempty"`
	// State is ProcessRunning or ProcessExited.
	State string `json:"state"`
	// ExitCode is set once it exited (128+signal when killed by one);
	// Signal names the signal that killed it.
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// OOMKilled says the OOM killer ended it or a descendant, as
	// ExecResponse.OOMKilled.
	OOMKilled bool   `json:"oom_killed,omitempty"`
	StartedAt string `json:"started_at"`
	EndedAt   string `json:"ended_at,omitempty"`
	Pty       bool   `json:"pty,omitempty"`
	Stdin     bool   `json:"stdin,omitempty"`
	// StdoutBytes and StderrBytes are how many bytes each stream has
	// written so far: the offsets output continues from.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
}

// ProcessListRequest is the payload of sandbox::process::list.
type ProcessListRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// ProcessEntry is one process of the sandbox as the sandbox sees it.
type ProcessEntry struct {
	Pid     int    `json:"pid"`
	Ppid    int    `json:"ppid"`
	User    string `json:"user"`
	Command string `json:"command"`
	// State is the kernel's one-letter state (R, S, D, Z, T, ...).
	State      string  `json:"state"`
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
	// Hutch is set for a process started through hutch (exec, process
	// start, a terminal), with its Tag.
	Hutch bool   `json:"hutch,omitempty"`
	Tag   string `json:"tag,omitempty"`
}

// ProcessListResponse is the result of sandbox::process::list: every
// process of the sandbox but the agent, by pid.
type ProcessListResponse struct {
	Processes []ProcessEntry `json:"processes"`
}

// ProcessOutputRequest is the payload of sandbox::process::output.
type ProcessOutputRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	// StdoutOffset and StderrOffset are where to start in each stream
	// (the offsets an earlier answer ended at); 0 is the oldest byte held.
	StdoutOffset int64 `json:"stdout_offset,omitempty"`
	StderrOffset int64 `json:"stderr_offset,omitempty"`
	// Follow streams the output as it is written, until the process
	// exits: events stdout, stderr and exit.
	Follow bool `json:"follow,omitempty"`
}

// ProcessOutputResponse is the result of sandbox::process::output without
// follow: what each stream holds from the offsets asked for, and the
// process's state. With follow it is the stream's final value.
type ProcessOutputResponse struct {
	Stdout OutputChunk `json:"stdout"`
	Stderr OutputChunk `json:"stderr"`
	// Process is the process's state after this output.
	Process ProcessInfo `json:"process"`
}

// ProcessStdinRequest is the payload of sandbox::process::stdin.
type ProcessStdinRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	// Data is written as UTF-8 text, or decoded from base64 when Base64
	// is set.
	Data   string `json:"data,omitempty"`
	Base64 bool   `json:"base64,omitempty"`
	// Close closes stdin after Data: the process reads EOF.
	Close bool `json:"close,omitempty"`
}

// ProcessStdinResponse is the result of sandbox::process::stdin.
type ProcessStdinResponse struct {
	Written int `json:"written"`
}

// ProcessSignalRequest is the payload of sandbox::process::signal.
type ProcessSignalRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	// Signal is a name ("TERM", "SIGTERM") or a number ("15"); the
	// default is TERM.
	Signal string `json:"signal,omitempty"`
}

// ProcessSignalResponse is the result of sandbox::process::signal and
// sandbox::process::kill.
type ProcessSignalResponse struct {
	Pid    int    `json:"pid"`
	Signal string `json:"signal"`
}

// ProcessWaitRequest is the payload of sandbox::process::wait.
type ProcessWaitRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	// TimeoutMs is how long to wait; at its end the answer is the
	// process's state, still running. 0 means the daemon's maximum.
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
}

// ProcessResizeRequest is the payload of sandbox::process::resize.
type ProcessResizeRequest struct {
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	PtySize
}

// ProcessResizeResponse is the result of sandbox::process::resize.
type ProcessResizeResponse struct {
	Pid int `json:"pid"`
}

// PidScoped is a request that names a process of its sandbox.
type PidScoped interface{ PidField() *int }

func (r *ProcessStartRequest) SandboxIDField() *string  { return &r.SandboxID }
func (r *ProcessRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *ProcessRequest) PidField() *int                { return &r.Pid }
func (r *ProcessListRequest) SandboxIDField() *string   { return &r.SandboxID }
func (r *ProcessOutputRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ProcessOutputRequest) PidField() *int          { return &r.Pid }
func (r *ProcessStdinRequest) SandboxIDField() *string  { return &r.SandboxID }
func (r *ProcessStdinRequest) PidField() *int           { return &r.Pid }
func (r *ProcessSignalRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ProcessSignalRequest) PidField() *int          { return &r.Pid }
func (r *ProcessWaitRequest) SandboxIDField() *string   { return &r.SandboxID }
func (r *ProcessWaitRequest) PidField() *int            { return &r.Pid }
func (r *ProcessResizeRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ProcessResizeRequest) PidField() *int          { return &r.Pid }

// EventLog is an event of sandbox::process::logs: a LogLine.
const EventLog = "log"

// LogsRequest is the payload of sandbox::process::logs.
type LogsRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Tag keeps the processes with this tag only.
	Tag string `json:"tag,omitempty"`
	// Follow streams output as it is written, and that of processes
	// started later, until the caller goes away or the sandbox stops;
	// without it the stream ends with what the processes hold now.
	Follow bool `json:"follow,omitempty"`
}

// LogLine is a piece of a background process's output, tagged with the
// process it came from.
type LogLine struct {
	Pid int    `json:"pid"`
	Tag string `json:"tag,omitempty"`
	// Stream is "stdout" or "stderr".
	Stream string `json:"stream"`
	OutputChunk
}
