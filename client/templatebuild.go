package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// BuildTemplate runs sandbox::template::build (POST /v1/templates/build):
// on receives each step of the build as it happens (an
// api.TemplateBuildEvent; nil to take none); the result is also
// returned. Cancelling ctx
// cancels the build.
func (c *Client) BuildTemplate(ctx context.Context, req api.TemplateBuildRequest, on func(api.TemplateBuildEvent) error) (api.TemplateBuildResponse, error) {
	var out api.TemplateBuildResponse
	err := c.streamEvents(ctx, http.MethodPost, "/v1/templates/build", req, func(_ string, data json.RawMessage) error {
		var ev api.TemplateBuildEvent
		if on == nil || json.Unmarshal(data, &ev) != nil {
			return nil // none asked for, or an event of a newer daemon
		}
		return on(ev)
	}, &out)
	return out, err
}

// CancelTemplateBuild runs sandbox::template::build::cancel (DELETE
// /v1/templates/build/{name}): the caller's builds of that template in
// progress stop at their running step (S007 when none runs).
func (c *Client) CancelTemplateBuild(ctx context.Context, name string) (api.TemplateBuildCancelResponse, error) {
	var out api.TemplateBuildCancelResponse
	return out, c.do(ctx, http.MethodDelete, "/v1/templates/build/"+url.PathEscape(name), nil, &out)
}
