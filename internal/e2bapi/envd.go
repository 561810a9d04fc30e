package e2bapi

import (
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// envd serves port 49983: GET /health here (204 while the sandbox runs,
// 502 otherwise, as E2B's proxy answers for a sandbox that is gone), the
// rest by Options.Envd.
func (tr *Transport) envd() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			s, err := functions.Call[api.SandboxInfo](r.Context(), tr.t, api.FnGet, api.GetRequest{SandboxID: r.Header.Get(api.HeaderE2BSandboxID)})
			if err != nil || stateOf(s.State) != "running" {
				http.Error(w, "sandbox not running", http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if tr.opts.Envd == nil {
			writeJSON(w, http.StatusNotImplemented, connectError{Code: "unimplemented",
				Message: "this hutch serves no envd yet: commands, files and terminals through the E2B SDK are not available"})
			return
		}
		tr.opts.Envd.ServeHTTP(w, r)
	})
}

// connectError is the Connect protocol's error body.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
