package api

// Templates (hutch extensions beyond the seeds' contract): a named
// starting point for sandbox::create {template}: an image and defaults,
// and optionally a snapshot to restore or a writable layer captured from
// a sandbox.

// Function ids of the template functions.
const (
	FnTemplateCreate = "sandbox::template::create"
	FnTemplateList   = "sandbox::template::list"
	FnTemplateGet    = "sandbox::template::get"
	FnTemplateDelete = "sandbox::template::delete"
)

// TemplateDefaults are what a template gives a create; the create's own
// fields override them.
type TemplateDefaults struct {
	Image           string            `json:"image,omitempty"`
	CPUs            uint32            `json:"cpus,omitempty"`
	MemoryMB        uint32            `json:"memory_mb,omitempty"`
	Network         bool              `json:"network,omitempty"`
	IdleTimeoutSecs uint64            `json:"idle_timeout_secs,omitempty"`
	Env             Env               `json:"env,omitempty"`
	TimeoutSecs     uint64            `json:"timeout_secs,omitempty"`
	OnIdle          string            `json:"on_idle,omitempty"`
	AutoResume      bool              `json:"auto_resume,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	// SnapshotID makes every sandbox of the template a restore of it.
	SnapshotID string `json:"snapshot_id,omitempty"`
	// Runtime is the isolation runtime its sandboxes start in (issue 40).
	Runtime string `json:"runtime,omitempty"`
}

// Apply fills the fields req leaves empty with d's; env and metadata are
// merged, req's entries winning.
func (d TemplateDefaults) Apply(req *CreateRequest) {
	if req.Image == "" {
		req.Image = d.Image
	}
	if req.CPUs == 0 {
		req.CPUs = d.CPUs
	}
	if req.MemoryMB == 0 {
		req.MemoryMB = d.MemoryMB
	}
	req.Network = req.Network || d.Network
	if req.IdleTimeoutSecs == 0 {
		req.IdleTimeoutSecs = d.IdleTimeoutSecs
	}
	if len(d.Env) > 0 {
		req.Env = append(append(Env(nil), d.Env...), req.Env...)
	}
	if req.TimeoutSecs == 0 {
		req.TimeoutSecs = d.TimeoutSecs
	}
	if req.OnIdle == "" {
		req.OnIdle = d.OnIdle
	}
	req.AutoResume = req.AutoResume || d.AutoResume
	if len(d.Metadata) > 0 {
		md := make(map[string]string, len(d.Metadata)+len(req.Metadata))
		for k, v := range d.Metadata {
			md[k] = v
		}
		for k, v := range req.Metadata {
			md[k] = v
		}
		req.Metadata = md
	}
	if req.SnapshotID == "" {
		req.SnapshotID = d.SnapshotID
	}
	if req.Runtime == "" { // issue 40
		req.Runtime = d.Runtime
	}
}

// DefaultsOf is what of req a template can hold.
func DefaultsOf(req CreateRequest) TemplateDefaults {
	return TemplateDefaults{Image: req.Image, CPUs: req.CPUs, MemoryMB: req.MemoryMB, Network: req.Network,
		IdleTimeoutSecs: req.IdleTimeoutSecs, Env: req.Env, TimeoutSecs: req.TimeoutSecs, OnIdle: req.OnIdle,
		AutoResume: req.AutoResume, Metadata: req.Metadata, SnapshotID: req.SnapshotID, Runtime: req.Runtime}
}

// TemplateCreateRequest is the payload of sandbox::template::create.
type TemplateCreateRequest struct {
	// Name is the template's, unique among the caller's templates.
	Name string `json:"name"`
	// FromSandbox captures that running sandbox's writable layer (the
	// files it changed): the template's sandboxes start with them, on
	// its image.
	FromSandbox string `json:"from_sandbox,omitempty"`
	TemplateDefaults
}

// TemplateRequest names one template (get, delete).
type TemplateRequest struct {
	Name string `json:"name"`
}

// TemplateInfo describes one template.
type TemplateInfo struct {
	Name string `json:"name"`
	TemplateDefaults
	// FromSandbox is the sandbox whose layer it captured, and LayerBytes
	// the layer's size.
	FromSandbox string `json:"from_sandbox,omitempty"`
	LayerBytes  int64  `json:"layer_bytes,omitempty"`
	CreatedAt   string `json:"created_at"`
	// LastBuild is the last build of a template built from a Dockerfile
	// (issue 39), failed ones included.
	LastBuild *TemplateBuildSummary `json:"last_build,omitempty"`
}

// TemplateBuildSummary is a template's last build: how it ended, its
// steps and layers, and the end of its log.
type TemplateBuildSummary struct {
	// Status is "succeeded" or "failed" (Error says why).
	Status      string `json:"status"`
	Error       string `json:"error,omitempty"`
	Steps       int    `json:"steps"`
	CachedSteps int    `json:"cached_steps"`
	// Layers is the number of layers the template keeps.
	Layers     int    `json:"layers"`
	DurationMs uint64 `json:"duration_ms"`
	FinishedAt string `json:"finished_at"`
	// Log is the build's last lines (at most 100): its steps, as "line N:
	// INSTRUCTION" with " (cached)" for a hit, and their output.
	Log []string `json:"log"`
}

// TemplateListRequest is the payload of sandbox::template::list (no fields).
type TemplateListRequest struct{}

// TemplateListResponse is the result of sandbox::template::list.
type TemplateListResponse struct {
	Templates []TemplateInfo `json:"templates"`
}

// TemplateDeleteResponse is the result of sandbox::template::delete.
type TemplateDeleteResponse struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (r *TemplateRequest) NameField() *string { return &r.Name }
