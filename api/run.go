package api

// RunFile is one file that sandbox::run writes before running the code.
type RunFile struct {
	// Path is absolute, inside the sandbox; missing parents are created.
	Path string `json:"path"`
	// Content is the file's text (UTF-8), written with mode 0644.
	Content string `json:"content"`
}

// RunRequest is the payload of sandbox::run: create a sandbox, write the
// files and the code, run the code with the language's interpreter, and
// stop the sandbox unless KeepSandbox.
type RunRequest struct {
	Image string `json:"image"`
	Code  string `json:"code"`
	// Lang is node/js/javascript, python/py, shell/sh/bash, or the path or
	// name of an interpreter that takes the code file as its argument.
	Lang  string    `json:"lang"`
	Files []RunFile `json:"files,omitempty"`
	// Env is the sandbox's create-time environment.
	Env Env `json:"env,omitempty"`
	// Stdin is base64, piped to the code; empty means EOF at once.
	Stdin     string `json:"stdin,omitempty"`
	TimeoutMs uint64 `json:"timeout_ms,omitempty"`
	// KeepSandbox leaves the sandbox running; its id is in the response.
	KeepSandbox bool `json:"keep_sandbox,omitempty"`
}

// RunResponse is the result of sandbox::run: the exec result of the code,
// plus the sandbox id when the sandbox was kept.
type RunResponse struct {
	ExecResponse
	SandboxID string `json:"sandbox_id,omitempty"`
}
