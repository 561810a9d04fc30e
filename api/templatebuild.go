package api

// Template builds (issue 39): a template built from a Dockerfile and its
// build context, each step a cached layer, its start command booted once
// and snapshotted running.

// FnTemplateBuild is the function id of a template build (a stream).
const FnTemplateBuild = "sandbox::template::build"

// Events of a template build (issue 39), about no sandbox: a build's
// start, each step it ran or took from the cache, its end or failure.
const (
	EventTemplateBuildStarted = "template.build.started"
	EventTemplateBuildStep    = "template.build.step"
	EventTemplateBuildDone    = "template.build.done"
	EventTemplateBuildFailed  = "template.build.failed"
)

// TemplateBuildRequest is the payload of sandbox::template::build.
type TemplateBuildRequest struct {
	// Name is the template's; a rebuild replaces the caller's built
	// template of that name.
	Name string `json:"name"`
	// Dockerfile is the Dockerfile's text.
	Dockerfile string `json:"dockerfile"`
	// Context is the build context as a tar (or tar.gz), base64 in JSON.
	Context []byte `json:"context,omitempty"`
	// BuildArgs set the Dockerfile's ARGs.
	BuildArgs map[string]string `json:"build_args,omitempty"`
	// Target is the stage to build (default the last).
	Target string `json:"target,omitempty"`
	// Network gives RUN steps (and the template's sandboxes) a network.
	Network  bool   `json:"network,omitempty"`
	CPUs     uint32 `json:"cpus,omitempty"`
	MemoryMB uint32 `json:"memory_mb,omitempty"`
	// StartCmd overrides the Dockerfile's CMD/ENTRYPOINT as the command
	// started once and snapshotted running; ReadyCmd (exits 0) or
	// ReadyPort (accepts a connection) says it is ready.
	StartCmd  string `json:"start_cmd,omitempty"`
	ReadyCmd  string `json:"ready_cmd,omitempty"`
	ReadyPort uint16 `json:"ready_port,omitempty"`
	// ReadyTimeoutSecs bounds the wait for ready (default 60).
	ReadyTimeoutSecs uint64 `json:"ready_timeout_secs,omitempty"`
	// NoCache runs every step again.
	NoCache bool `json:"no_cache,omitempty"`
	// Egress is the egress policy of the build's RUN steps, which then
	// have a network (the template's sandboxes have one only with
	// Network).
	Egress *EgressPolicy `json:"egress,omitempty"`
}

// TemplateBuildEvent is one event of a build's stream ("log" events):
// a step begun (Step, Line, Instruction, Cached), or a line of its output.
type TemplateBuildEvent struct {
	Stage       int    `json:"stage"`
	Step        int    `json:"step"`
	Steps       int    `json:"steps"`
	Line        int    `json:"line,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	Cached      bool   `json:"cached,omitempty"`
	Output      string `json:"output,omitempty"`
	// Phase is "step", "output", "start" (the start command), "snapshot"
	// or "done".
	Phase string `json:"phase"`
}

// TemplateBuildResponse is a build's result.
type TemplateBuildResponse struct {
	Template    TemplateInfo `json:"template"`
	Steps       int          `json:"steps"`
	CachedSteps int          `json:"cached_steps"`
	DurationMs  uint64       `json:"duration_ms"`
}

// FnTemplateBuildCancel is the function id that cancels the caller's
// build of a template in progress (issue 39: 4).
const FnTemplateBuildCancel = "sandbox::template::build::cancel"

// TemplateBuildCancelRequest names the template whose build to cancel.
type TemplateBuildCancelRequest struct {
	Name string `json:"name"`
}

// TemplateBuildCancelResponse says which builds were cancelled: the
// caller's builds of that name in progress (S007 when there is none).
type TemplateBuildCancelResponse struct {
	Name      string `json:"name"`
	Cancelled int    `json:"cancelled"`
}

// NameField takes the template's name from the URL.
func (r *TemplateBuildCancelRequest) NameField() *string { return &r.Name }
