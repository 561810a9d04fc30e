package httpapi

// The network routes: sandbox::network::* with the network and sandbox
// from the path.

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// networkRoutes are the routes of sandbox networks, for New's table.
func (s *server) networkRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/networks", routeDoc{fn: api.FnNetworkCreate, body: true}),
		s.fnRoute("GET", "/v1/networks", routeDoc{fn: api.FnNetworkList}),
		{"DELETE", "/v1/networks/{network}", s.networkByName, false, routeDoc{fn: api.FnNetworkDelete}},
		{"POST", "/v1/networks/{network}/members", s.networkMember(api.FnNetworkConnect), false, routeDoc{fn: api.FnNetworkConnect, body: true}},
		{"DELETE", "/v1/networks/{network}/members/{sandbox_id}", s.networkMember(api.FnNetworkDisconnect), false, routeDoc{fn: api.FnNetworkDisconnect}},
		s.fnRoute("POST", "/v1/sandboxes/{id}/network", routeDoc{fn: api.FnNetworkUpdate, body: true}, sandboxParam),
	}
}

// networkByName deletes the network of {network}.
func (s *server) networkByName(r *http.Request, _ []byte) (any, error) {
	body, _ := json.Marshal(api.NetworkRequest{Name: r.PathValue("network")})
	return s.dispatch(r, api.FnNetworkDelete, body, functions.Params{})
}

// networkMember dispatches to function id with {network}, and the sandbox
// of {sandbox_id} or of the body's sandbox_id.
func (s *server) networkMember(id string) handlerFunc {
	return func(r *http.Request, body []byte) (any, error) {
		var req api.NetworkConnectRequest
		if len(body) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				return nil, errdefs.Malformed("request body: %v", err)
			}
		}
		if req.Network != "" && req.Network != r.PathValue("network") {
			return nil, errdefs.Malformed("network %q in the body is not the path's %q", req.Network, r.PathValue("network"))
		}
		req.Network = r.PathValue("network")
		if p := r.PathValue("sandbox_id"); p != "" {
			req.SandboxID = p
		}
		b, _ := json.Marshal(req)
		return s.dispatch(r, id, b, functions.Params{})
	}
}
