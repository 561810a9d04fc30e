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

// PreviewTokenParam is the query parameter of a public port's host URL
// that carries its token, and the name of the cookie a browser trades it
// for on the preview host.
const PreviewTokenParam = "hutch_preview_token"

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
	URL string `json:"url"`
	// HostURL is the port's URL by host name when the daemon sets
	// preview_domain: http://{port}-{sandbox_id}.{preview_domain}[:port]/,
	// every path of it the server's own. A public port's carries
	// ?hutch_preview_token=, which a browser trades for a cookie of that
	// host on its first request.
	HostURL   string   `json:"host_url,omitempty"`
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
