package api

// The runtime environment (hutch extensions): a running sandbox's base
// environment, under every later exec's and process's own.

// Function ids of the environment functions.
const (
	FnEnvList   = "sandbox::env::list"
	FnEnvGet    = "sandbox::env::get"
	FnEnvSet    = "sandbox::env::set"
	FnEnvDelete = "sandbox::env::delete"
)

// EnvListRequest is the payload of sandbox::env::list.
type EnvListRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// EnvGetRequest is the payload of sandbox::env::get.
type EnvGetRequest struct {
	SandboxID string `json:"sandbox_id"`
	Key       string `json:"key"`
}

// EnvSetRequest is the payload of sandbox::env::set: variables added to
// (or replaced in) the sandbox's env.
type EnvSetRequest struct {
	SandboxID string `json:"sandbox_id"`
	Env       Env    `json:"env"`
}

// EnvDeleteRequest is the payload of sandbox::env::delete.
type EnvDeleteRequest struct {
	SandboxID string   `json:"sandbox_id"`
	Keys      []string `json:"keys"`
}

// EnvResponse is a sandbox's environment: Env is its own layer (the
// create's env and what sandbox::env::set added), Effective what an exec
// starts from (the image's env, then Env).
type EnvResponse struct {
	SandboxID string            `json:"sandbox_id"`
	Env       map[string]string `json:"env"`
	Effective map[string]string `json:"effective"`
}

// EnvValue is one variable of a sandbox's effective environment.
type EnvValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Set says the variable exists (Value may be empty either way).
	Set bool `json:"set"`
}

func (r *EnvListRequest) SandboxIDField() *string   { return &r.SandboxID }
func (r *EnvGetRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *EnvSetRequest) SandboxIDField() *string    { return &r.SandboxID }
func (r *EnvDeleteRequest) SandboxIDField() *string { return &r.SandboxID }
