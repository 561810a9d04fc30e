package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutch-dev/hutch/api"
)

// SubmitJob runs sandbox::job::submit.
func (c *Client) SubmitJob(ctx context.Context, req api.JobSubmitRequest) (api.JobInfo, error) {
	var out api.JobInfo
	return out, c.do(ctx, http.MethodPost, "/v1/jobs", req, &out)
}

// GetJob runs sandbox::job::get.
func (c *Client) GetJob(ctx context.Context, id string) (api.JobInfo, error) {
	var out api.JobInfo
	return out, c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, &out)
}

// ListJobs runs sandbox::job::list.
func (c *Client) ListJobs(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error) {
	var out api.JobListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/jobs"+jobQuery(req), nil, &out)
}

// CancelJob runs sandbox::job::cancel.
func (c *Client) CancelJob(ctx context.Context, id string) (api.JobInfo, error) {
	var out api.JobInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(id), nil, &out)
}

// DeadLetters runs sandbox::job::dlq.
func (c *Client) DeadLetters(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error) {
	var out api.JobListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/dlq"+jobQuery(req), nil, &out)
}

// RetryJob runs sandbox::job::retry.
func (c *Client) RetryJob(ctx context.Context, id string) (api.JobInfo, error) {
	var out api.JobInfo
	return out, c.do(ctx, http.MethodPost, "/v1/dlq/"+url.PathEscape(id)+"/retry", nil, &out)
}

func jobQuery(req api.JobListRequest) string {
	q := url.Values{}
	if req.State != "" {
		q.Set("state", req.State)
	}
	if req.SandboxID != "" {
		q.Set("sandbox_id", req.SandboxID)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
