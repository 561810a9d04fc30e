package httpapi

// The volume routes: sandbox::volume::* with the volume's name from the
// path.

import "github.com/hutch-dev/hutch/api"

// volumeRoutes are the routes of volumes, for New's table.
func (s *server) volumeRoutes() []route {
	return []route{
		{"POST", "/v1/volumes", s.call(api.FnVolumeCreate), false, routeDoc{fn: api.FnVolumeCreate, body: true}},
		{"GET", "/v1/volumes", s.call(api.FnVolumeList), false, routeDoc{fn: api.FnVolumeList}},
		{"GET", "/v1/volumes/{name}", s.call(api.FnVolumeGet, nameParam), false, routeDoc{fn: api.FnVolumeGet}},
		{"DELETE", "/v1/volumes/{name}", s.call(api.FnVolumeDelete, nameParam), false, routeDoc{fn: api.FnVolumeDelete}},
	}
}
