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
		{"POST", "/v1/sandboxes/{id}/pause", s.call(api.FnPause, sandboxParam), false, routeDoc{fn: api.FnPause, body: true}},
		{"POST", "/v1/sandboxes/{id}/resume", s.call(api.FnResume, sandboxParam), false, routeDoc{fn: api.FnResume, body: true}},
		{"POST", "/v1/sandboxes/{id}/timeout", s.call(api.FnSetTimeout, sandboxParam), false, routeDoc{fn: api.FnSetTimeout, body: true}},
		{"POST", "/v1/sandboxes/{id}/snapshots", s.call(api.FnSnapshotCreate, sandboxParam), false, routeDoc{fn: api.FnSnapshotCreate, body: true}},
		{"POST", "/v1/sandboxes/{id}/fork", s.call(api.FnFork, sandboxParam), false, routeDoc{fn: api.FnFork, body: true}},
		{"GET", "/v1/snapshots", s.call(api.FnSnapshotList), false, routeDoc{fn: api.FnSnapshotList}},
		{"GET", "/v1/snapshots/{snapshot_id}", s.call(api.FnSnapshotGet, snapshotParam), false, routeDoc{fn: api.FnSnapshotGet}},
		{"DELETE", "/v1/snapshots/{snapshot_id}", s.call(api.FnSnapshotDelete, snapshotParam), false, routeDoc{fn: api.FnSnapshotDelete}},
		{"POST", "/v1/templates", s.call(api.FnTemplateCreate), false, routeDoc{fn: api.FnTemplateCreate, body: true}},
		{"GET", "/v1/templates", s.call(api.FnTemplateList), false, routeDoc{fn: api.FnTemplateList}},
		{"GET", "/v1/templates/{name}", s.call(api.FnTemplateGet, nameParam), false, routeDoc{fn: api.FnTemplateGet}},
		{"DELETE", "/v1/templates/{name}", s.call(api.FnTemplateDelete, nameParam), false, routeDoc{fn: api.FnTemplateDelete}},
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
