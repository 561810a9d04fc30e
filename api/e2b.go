package api

// The headers of E2B's SDKs on in-sandbox requests (internal/e2bapi): the
// sandbox and port a request is for, and the sandbox's access tokens.
const (
	HeaderE2BSandboxID    = "E2b-Sandbox-Id"
	HeaderE2BSandboxPort  = "E2b-Sandbox-Port"
	HeaderE2BAccessToken  = "X-Access-Token"
	HeaderE2BTrafficToken = "E2B-Traffic-Access-Token"
	HeaderE2BAPIKey       = "X-API-KEY"
)
