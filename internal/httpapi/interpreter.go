package httpapi

// The interpreter routes: contexts of a sandbox, and cells run in them
// (a stream: SSE or NDJSON).

import (
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// interpreterRoutes are the routes of the interpreter, for New's table.
func (s *server) interpreterRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/sandboxes/{id}/contexts", routeDoc{fn: api.FnContextCreate, body: true}, sandboxParam),
		s.fnRoute("GET", "/v1/sandboxes/{id}/contexts", routeDoc{fn: api.FnContextList}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/run-code", routeDoc{fn: api.FnRunCode, body: true, stream: true}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/packages", routeDoc{fn: api.FnInstall, body: true, stream: true}, sandboxParam),
		{"POST", "/v1/contexts/{context_id}/restart", s.contextByID(api.FnContextRestart), false, routeDoc{fn: api.FnContextRestart}},
		{"POST", "/v1/contexts/{context_id}/interrupt", s.contextByID(api.FnInterrupt), false, routeDoc{fn: api.FnInterrupt}},
		{"DELETE", "/v1/contexts/{context_id}", s.contextByID(api.FnContextDelete), false, routeDoc{fn: api.FnContextDelete}},
	}
}

// contextByID dispatches to function id with the context of {context_id}.
func (s *server) contextByID(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		body, _ := json.Marshal(api.ContextRequest{ContextID: r.PathValue("context_id")})
		return s.dispatch(r, id, body, functions.Params{})
	}
}
