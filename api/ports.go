package api

// Ports (hutch extensions): a server listening inside a sandbox, reached
// through hutch's HTTP listener and the sandbox's agent.

// Function ids of the port functions.
const (
	FnPortExpose   = "sandbox::port::expose"
	FnPortList     = "sandbox::port::list"
	FnPortUnexpose = "sandbox::port::unexpose"
)

// Preview request headers: on any request to the listener, they send it to
// a sandbox's port (for clients that cannot resolve wildcard names).
const (
	HeaderSandboxID    = "Hutch-Sandbox-Id"
	HeaderSandboxPort  = "Hutch-Sandbox-Port"
	HeaderPreviewToken = "Hutch-Preview-Token"
)

// PortExposeRequest is the payload of sandbox::port::expose.
type PortExposeRequest struct {
	SandboxID string `json:"sandbox_id"`
	Port      int    `json:"port"`
	// Public makes the port reachable without the owner's token, through
	// a URL that carries an unguessable token of its own.
	Public bool `json:"public,omitempty"`
	// ExpiresInSecs ends a public URL after this long (0: never).
	ExpiresInSecs uint64 `json:"expires_in_secs,omitempty"`
	// CORS are the origins whose pages may call the port from a browser.
	CORS []string `json:"cors,omitempty"`
}

// PortInfo describes an exposed port.
type PortInfo struct {
	SandboxID string `json:"sandbox_id"`
	Port      int    `json:"port"`
	// URL is the port's preview URL, as a path of the daemon's listener:
	// /v1/sandboxes/{id}/ports/{port}/ (the owner's token needed), or for
	// a public port /p/{token}/.
	URL       string   `json:"url"`
	Public    bool     `json:"public"`
	ExpiresAt string   `json:"expires_at,omitempty"`
	CORS      []string `json:"cors,omitempty"`
}

// PortRequest names a port of a sandbox.
type PortRequest struct {
	SandboxID string `json:"sandbox_id"`
	Port      int    `json:"port"`
}

// PortListRequest is the payload of sandbox::port::list.
type PortListRequest struct {
	SandboxID string `json:"sandbox_id"`
}

// PortListResponse is the result of sandbox::port::list.
type PortListResponse struct {
	Ports []PortInfo `json:"ports"`
}

func (r *PortExposeRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *PortRequest) SandboxIDField() *string       { return &r.SandboxID }
func (r *PortListRequest) SandboxIDField() *string   { return &r.SandboxID }
