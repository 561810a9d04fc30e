package api

// PreviewOptions are a sandbox's preview terms, given on create
// ("preview"; issue 37): how every request through hutch's preview proxy
// reaches its ports.
type PreviewOptions struct {
	// HostHeader replaces the Host header the sandbox's servers see on
	// preview requests ("" keeps the request's own); "${PORT}" in it is
	// the port reached, e.g. "app.example.com:${PORT}".
	HostHeader string `json:"host_header,omitempty"`
	// Private makes its ports reachable only with the owner's token (or
	// E2B's trafficAccessToken): no port of it may be made public.
	Private bool `json:"private,omitempty"`
}

// PortVar is the variable of PreviewOptions.HostHeader that stands for
// the port reached.
const PortVar = "${PORT}"
