package httpapi

// The lifecycle routes (pause, resume, timeout) and the list's query.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// snapshotParam is {snapshot_id} as snapshot_id.
func snapshotParam(r *http.Request, p *functions.Params) error {
	p.SnapshotID = r.PathValue("snapshot_id")
	return nil
}

// stateRoutes are the routes of the lifecycle, snapshot and fork
// functions, for New's table.
func (s *server) stateRoutes() []route {
	return []route{
		{"GET", "/v1/sandboxes", s.list, false, routeDoc{fn: api.FnList, query: []queryParam{q("state", "string", "running or paused"), q("metadata", "string", "key=value (repeatable)"), q("limit", "integer", "page size"), q("next_token", "string", "the next page")}}},
		s.fnRoute("POST", "/v1/sandboxes/{id}/pause", routeDoc{fn: api.FnPause, body: true}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/resume", routeDoc{fn: api.FnResume, body: true}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/timeout", routeDoc{fn: api.FnSetTimeout, body: true}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/snapshots", routeDoc{fn: api.FnSnapshotCreate, body: true}, sandboxParam),
		s.fnRoute("POST", "/v1/sandboxes/{id}/fork", routeDoc{fn: api.FnFork, body: true}, sandboxParam),
		s.fnRoute("GET", "/v1/snapshots", routeDoc{fn: api.FnSnapshotList}),
		s.fnRoute("GET", "/v1/snapshots/{snapshot_id}", routeDoc{fn: api.FnSnapshotGet}, snapshotParam),
		s.fnRoute("DELETE", "/v1/snapshots/{snapshot_id}", routeDoc{fn: api.FnSnapshotDelete}, snapshotParam),
		s.fnRoute("POST", "/v1/templates", routeDoc{fn: api.FnTemplateCreate, body: true}),
		s.fnRoute("GET", "/v1/templates", routeDoc{fn: api.FnTemplateList}),
		s.fnRoute("GET", "/v1/templates/{name}", routeDoc{fn: api.FnTemplateGet}, nameParam),
		s.fnRoute("DELETE", "/v1/templates/{name}", routeDoc{fn: api.FnTemplateDelete}, nameParam),
	}
}

// list is sandbox::list with its filter from the query: state (repeated
// or comma-separated), metadata (repeated key=value pairs, or E2B's one
// URL-encoded "k1=v1&k2=v2"), limit and next_token.
func (s *server) list(r *http.Request, _ []byte) (any, error) {
	q := r.URL.Query()
	var req api.ListRequest
	for _, v := range q["state"] {
		for st := range strings.SplitSeq(v, ",") {
			if st != "" {
				req.State = append(req.State, st)
			}
		}
	}
	for _, v := range q["metadata"] {
		pairs, err := url.ParseQuery(v)
		if err != nil {
			return nil, errdefs.Malformed("query parameter metadata must be key=value pairs: %v", err)
		}
		for k, vs := range pairs {
			if req.Metadata == nil {
				req.Metadata = map[string]string{}
			}
			req.Metadata[k] = vs[len(vs)-1]
		}
	}
	var err error
	if req.Limit, err = queryCount(q, "limit"); err != nil {
		return nil, err
	}
	req.NextToken = q.Get("next_token")
	body, _ := json.Marshal(req)
	return s.dispatch(r, api.FnList, body, functions.Params{})
}
