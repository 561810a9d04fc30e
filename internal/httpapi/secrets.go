package httpapi

import "github.com/hutch-dev/hutch/api"

// secretRoutes are the routes of owners' secrets and of a sandbox's
// egress log (issue 37), for New's table.
func (s *server) secretRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/secrets", routeDoc{fn: api.FnSecretSet, body: true}),
		s.fnRoute("GET", "/v1/secrets", routeDoc{fn: api.FnSecretList}),
		s.fnRoute("DELETE", "/v1/secrets/{name}", routeDoc{fn: api.FnSecretDelete}, nameParam),
		s.fnRoute("GET", "/v1/sandboxes/{id}/egress", routeDoc{fn: api.FnEgressLog}, sandboxParam),
	}
}
