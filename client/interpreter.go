package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// CreateContext runs sandbox::interpreter::context::create.
func (c *Client) CreateContext(ctx context.Context, req api.ContextCreateRequest) (api.ContextInfo, error) {
	return sandboxCall[api.ContextInfo](ctx, c, req.SandboxID, "/contexts", req)
}

// ListContexts runs sandbox::interpreter::context::list.
func (c *Client) ListContexts(ctx context.Context, sandboxID string) (api.ContextListResponse, error) {
	var out api.ContextListResponse
	p, err := sandboxPath(sandboxID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p+"/contexts", nil, &out)
}

// RestartContext runs sandbox::interpreter::context::restart.
func (c *Client) RestartContext(ctx context.Context, id string) (api.ContextInfo, error) {
	var out api.ContextInfo
	return out, c.do(ctx, http.MethodPost, "/v1/contexts/"+url.PathEscape(id)+"/restart", nil, &out)
}

// DeleteContext runs sandbox::interpreter::context::delete.
func (c *Client) DeleteContext(ctx context.Context, id string) (api.ContextInfo, error) {
	var out api.ContextInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/contexts/"+url.PathEscape(id), nil, &out)
}

// Interrupt runs sandbox::interpreter::interrupt.
func (c *Client) Interrupt(ctx context.Context, id string) (api.InterruptResponse, error) {
	var out api.InterruptResponse
	return out, c.do(ctx, http.MethodPost, "/v1/contexts/"+url.PathEscape(id)+"/interrupt", nil, &out)
}

// RunCode runs a cell (sandbox::interpreter::run), handing its stdout and
// stderr events (api.OutputChunk) to on as they come, and returns its
// result. A cell run by context_id alone goes through
// /v1/functions/sandbox::interpreter::run.
func (c *Client) RunCode(ctx context.Context, req api.RunCodeRequest, on func(event string, data json.RawMessage) error) (api.CellResult, error) {
	var out api.CellResult
	path := "/v1/functions/" + api.FnRunCode
	if req.SandboxID != "" {
		p, err := sandboxPath(req.SandboxID)
		if err != nil {
			return out, err
		}
		path = p + "/run-code"
	}
	return out, c.streamEvents(ctx, http.MethodPost, path, req, on, &out)
}

// Install runs sandbox::interpreter::install, handing the tool's output
// events to on, and returns its exit.
func (c *Client) Install(ctx context.Context, req api.InstallRequest, on func(event string, data json.RawMessage) error) (api.ExecResponse, error) {
	var out api.ExecResponse
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return out, err
	}
	return out, c.streamEvents(ctx, http.MethodPost, p+"/packages", req, on, &out)
}
