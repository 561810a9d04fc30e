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
		{"GET", "/v1/sandboxes/{id}/env", s.call(api.FnEnvList, sandboxParam), false},
		{"POST", "/v1/sandboxes/{id}/env", s.call(api.FnEnvSet, sandboxParam), false},
		{"GET", "/v1/sandboxes/{id}/env/{key}", s.envKey(api.FnEnvGet), false},
		{"DELETE", "/v1/sandboxes/{id}/env/{key}", s.envKey(api.FnEnvDelete), false},
	}
}

// envKey dispatches to function id with the variable of {key}.
func (s *server) envKey(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		var req any = api.EnvGetRequest{Key: r.PathValue("key")}
		if id == api.FnEnvDelete {
			req = api.EnvDeleteRequest{Keys: []string{r.PathValue("key")}}
		}
		body, _ := json.Marshal(req)
		return s.dispatch(r, id, body, functions.Params{SandboxID: r.PathValue("id")})
	}
}

func init() {
	for path, doc := range map[string]routeDoc{
		"GET /v1/sandboxes/{id}/env":          {fn: api.FnEnvList},
		"POST /v1/sandboxes/{id}/env":         {fn: api.FnEnvSet, body: true},
		"GET /v1/sandboxes/{id}/env/{key}":    {fn: api.FnEnvGet},
		"DELETE /v1/sandboxes/{id}/env/{key}": {fn: api.FnEnvDelete},
	} {
		routeDocs[path] = doc
	}
}
