package httpapi

// The volume routes: sandbox::volume::* with the volume's name from the
// path.

import "github.com/hutch-dev/hutch/api"

// volumeRoutes are the routes of volumes, for New's table.
func (s *server) volumeRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/volumes", routeDoc{fn: api.FnVolumeCreate, body: true}),
		s.fnRoute("GET", "/v1/volumes", routeDoc{fn: api.FnVolumeList}),
		s.fnRoute("GET", "/v1/volumes/{name}", routeDoc{fn: api.FnVolumeGet}, nameParam),
		s.fnRoute("DELETE", "/v1/volumes/{name}", routeDoc{fn: api.FnVolumeDelete}, nameParam),
	}
}
