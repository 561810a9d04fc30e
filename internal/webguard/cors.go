package webguard

import "net/http"

// CORS answers for the pages of allowed_origins, so that a browser lets
// them read what the REST API returns: it sets Access-Control-Allow-Origin
// on a request from such a page and reports whether the request is a CORS
// preflight, which it has answered (204) and the caller must not serve.
// Requests from other origins get no CORS headers (Check refuses them).
func (p *Policy) CORS(w http.ResponseWriter, r *http.Request) (answered bool) {
	origin := r.Header.Get("Origin")
	if !p.OriginAllowed(origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
	h.Set("Access-Control-Allow-Headers", allowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// allowHeaders are the request headers an allowed page may send: hutch's,
// and those of E2B's SDKs (internal/e2bapi), which also run in browsers.
const allowHeaders = "Authorization, Content-Type, Accept, Traceparent, Tracestate, " +
	"X-API-KEY, X-Access-Token, E2b-Sandbox-Id, E2b-Sandbox-Port, E2B-Traffic-Access-Token, " +
	"Connect-Protocol-Version, Connect-Timeout-Ms, Keepalive-Ping-Interval"
