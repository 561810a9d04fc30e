package httpapi

// The job routes: sandbox::job::* with the job id from the path and a
// list's filter from the query.

import (
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// jobRoutes are the routes of queued jobs, for New's table.
func (s *server) jobRoutes() []route {
	return []route{
		s.fnRoute("POST", "/v1/jobs", routeDoc{fn: api.FnJobSubmit, body: true}),
		{"GET", "/v1/jobs", s.jobQuery(api.FnJobList), false, routeDoc{fn: api.FnJobList, query: jobQuery}},
		{"GET", "/v1/jobs/{job_id}", s.jobByID(api.FnJobGet), false, routeDoc{fn: api.FnJobGet}},
		{"DELETE", "/v1/jobs/{job_id}", s.jobByID(api.FnJobCancel), false, routeDoc{fn: api.FnJobCancel}},
		{"GET", "/v1/dlq", s.jobQuery(api.FnJobDLQ), false, routeDoc{fn: api.FnJobDLQ, query: jobQuery}},
		{"POST", "/v1/dlq/{job_id}/retry", s.jobByID(api.FnJobRetry), false, routeDoc{fn: api.FnJobRetry}},
	}
}

// jobByID dispatches to function id with the job of {job_id}.
func (s *server) jobByID(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		body, _ := json.Marshal(api.JobRequest{JobID: r.PathValue("job_id")})
		return s.dispatch(r, id, body, functions.Params{})
	}
}

// jobQuery dispatches to function id with ?state=, ?sandbox_id= and
// ?limit= from the query.
func (s *server) jobQuery(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		req := api.JobListRequest{State: q.Get("state"), SandboxID: q.Get("sandbox_id")}
		var err error
		if req.Limit, err = queryCount(q, "limit"); err != nil {
			return nil, err
		}
		body, _ := json.Marshal(req)
		return s.dispatch(r, id, body, functions.Params{})
	}
}
