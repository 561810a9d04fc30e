package httpapi

// The quota route (issue 38): sandbox::quota, the caller's use against
// its limits.

import "github.com/hutch-dev/hutch/api"

// quotaRoutes are the routes of quotas, for New's table.
func (s *server) quotaRoutes() []route {
	return []route{s.fnRoute("GET", "/v1/quota", routeDoc{fn: api.FnQuota})}
}
