package httpapi

// The environment routes: sandbox::env::* with the sandbox and variable
// from the path.

import (
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// envRoutes are the routes of a sandbox's environment, for New's table.
func (s *server) envRoutes() []route {
	return []route{
		s.fnRoute("GET", "/v1/sandboxes/{id}/env", routeDoc{fn: api.FnEnvList}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/env", routeDoc{fn: api.FnEnvSet, body: true}, sandboxParam),
		{"GET", "/v1/sandboxes/{id}/env/{key}", s.envKey(api.FnEnvGet), false, routeDoc{fn: api.FnEnvGet}},
		{"DELETE", "/v1/sandboxes/{id}/env/{key}", s.envKey(api.FnEnvDelete), false, routeDoc{fn: api.FnEnvDelete}},
	}
}

// envKey dispatches to function id with the sandbox of {id} and the
// variable of {key}. The payload names the sandbox itself: its sandbox_id
// is always encoded, and an empty one would disagree with the URL.
func (s *server) envKey(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		sandboxID := r.PathValue("id")
		var req any = api.EnvGetRequest{SandboxID: sandboxID, Key: r.PathValue("key")}
		if id == api.FnEnvDelete {
			req = api.EnvDeleteRequest{SandboxID: sandboxID, Keys: []string{r.PathValue("key")}}
		}
		body, _ := json.Marshal(req)
		return s.dispatch(r, id, body, functions.Params{SandboxID: sandboxID})
	}
}
