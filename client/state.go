package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
)

// ListFiltered runs sandbox::list with a filter and a page: the sandboxes
// in one of req.State, whose metadata has req.Metadata's pairs, at most
// req.Limit of them after req.NextToken.
func (c *Client) ListFiltered(ctx context.Context, req api.ListRequest) (api.ListResponse, error) {
	q := url.Values{}
	if len(req.State) > 0 {
		q.Set("state", strings.Join(req.State, ","))
	}
	for k, v := range req.Metadata {
		q.Add("metadata", url.Values{k: {v}}.Encode())
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.NextToken != "" {
		q.Set("next_token", req.NextToken)
	}
	p := "/v1/sandboxes"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out api.ListResponse
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}

// Pause runs sandbox::pause; depth "" is api.PauseFreeze.
func (c *Client) Pause(ctx context.Context, id, depth string) (api.StateResponse, error) {
	return sandboxCall[api.StateResponse](ctx, c, id, "/pause", api.PauseRequest{SandboxID: id, Depth: depth})
}

// Resume runs sandbox::resume.
func (c *Client) Resume(ctx context.Context, id string) (api.StateResponse, error) {
	return sandboxCall[api.StateResponse](ctx, c, id, "/resume", api.ResumeRequest{SandboxID: id})
}

// SetTimeout runs sandbox::set_timeout: sandbox id ends secs from now.
func (c *Client) SetTimeout(ctx context.Context, id string, secs uint64) (api.SetTimeoutResponse, error) {
	return sandboxCall[api.SetTimeoutResponse](ctx, c, id, "/timeout", api.SetTimeoutRequest{SandboxID: id, TimeoutSecs: secs})
}

// sandboxCall POSTs in to route (e.g. "/pause") under sandbox id's path.
func sandboxCall[Resp any](ctx context.Context, c *Client, id, route string, in any) (Resp, error) {
	var out Resp
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+route, in, &out)
}

// sandboxGet GETs route under sandbox id's path.
func sandboxGet[Resp any](ctx context.Context, c *Client, id, route string) (Resp, error) {
	var out Resp
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p+route, nil, &out)
}

// CreateSnapshot runs sandbox::snapshot::create.
func (c *Client) CreateSnapshot(ctx context.Context, id, name string) (api.SnapshotInfo, error) {
	return sandboxCall[api.SnapshotInfo](ctx, c, id, "/snapshots", api.SnapshotCreateRequest{SandboxID: id, Name: name})
}

// Fork runs sandbox::fork: count running copies of sandbox id.
func (c *Client) Fork(ctx context.Context, id string, count int) (api.ForkResponse, error) {
	return sandboxCall[api.ForkResponse](ctx, c, id, "/fork", api.ForkRequest{SandboxID: id, Count: count})
}

// ListSnapshots runs sandbox::snapshot::list.
func (c *Client) ListSnapshots(ctx context.Context) (api.SnapshotListResponse, error) {
	var out api.SnapshotListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/snapshots", nil, &out)
}

// GetSnapshot runs sandbox::snapshot::get.
func (c *Client) GetSnapshot(ctx context.Context, id string) (api.SnapshotInfo, error) {
	var out api.SnapshotInfo
	if id == "" {
		return out, errors.New("snapshot id is empty")
	}
	return out, c.do(ctx, http.MethodGet, "/v1/snapshots/"+url.PathEscape(id), nil, &out)
}

// DeleteSnapshot runs sandbox::snapshot::delete.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) (api.SnapshotDeleteResponse, error) {
	var out api.SnapshotDeleteResponse
	if id == "" {
		return out, errors.New("snapshot id is empty")
	}
	return out, c.do(ctx, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(id), nil, &out)
}

// CreateTemplate runs sandbox::template::create.
func (c *Client) CreateTemplate(ctx context.Context, req api.TemplateCreateRequest) (api.TemplateInfo, error) {
	var out api.TemplateInfo
	return out, c.do(ctx, http.MethodPost, "/v1/templates", req, &out)
}

// ListTemplates runs sandbox::template::list.
func (c *Client) ListTemplates(ctx context.Context) (api.TemplateListResponse, error) {
	var out api.TemplateListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/templates", nil, &out)
}

// DeleteTemplate runs sandbox::template::delete.
func (c *Client) DeleteTemplate(ctx context.Context, name string) (api.TemplateDeleteResponse, error) {
	var out api.TemplateDeleteResponse
	if name == "" {
		return out, errors.New("template name is empty")
	}
	return out, c.do(ctx, http.MethodDelete, "/v1/templates/"+url.PathEscape(name), nil, &out)
}

// GetTemplate runs sandbox::template::get.
func (c *Client) GetTemplate(ctx context.Context, name string) (api.TemplateInfo, error) {
	var out api.TemplateInfo
	return out, c.do(ctx, http.MethodGet, "/v1/templates/"+url.PathEscape(name), nil, &out)
}

// ExposePort runs sandbox::port::expose.
func (c *Client) ExposePort(ctx context.Context, req api.PortExposeRequest) (api.PortInfo, error) {
	return sandboxCall[api.PortInfo](ctx, c, req.SandboxID, "/ports", req)
}

// ListPorts runs sandbox::port::list.
func (c *Client) ListPorts(ctx context.Context, id string) (api.PortListResponse, error) {
	return sandboxGet[api.PortListResponse](ctx, c, id, "/ports")
}

// UnexposePort runs sandbox::port::unexpose.
func (c *Client) UnexposePort(ctx context.Context, id string, port int) (api.PortInfo, error) {
	var out api.PortInfo
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodDelete, p+"/ports/"+strconv.Itoa(port), nil, &out)
}
