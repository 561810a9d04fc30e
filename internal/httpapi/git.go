package httpapi

// The git routes: POST /v1/sandboxes/{id}/git/{op}, one per
// sandbox::git::{op}, the sandbox from the path and the rest in the body.

import (
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// gitRoute is the path of git operation op.
func gitRoute(op string) string { return "/v1/sandboxes/{id}/git/" + op }

// gitRoutes are the routes of git, for New's table.
func (s *server) gitRoutes() []route {
	routes := make([]route, 0, len(api.GitFns))
	for _, fn := range api.GitFns {
		routes = append(routes, s.fnRoute(http.MethodPost, gitRoute(api.FnOp(fn)), routeDoc{fn: fn, body: true}, sandboxParam))
	}
	return routes
}
