package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// BuildTemplate runs sandbox::template::build (POST /v1/templates/build):
// on receives each step of the build as it happens (an
// api.TemplateBuildEvent); the result is also returned. Cancelling ctx
// cancels the build.
func (c *Client) BuildTemplate(ctx context.Context, req api.TemplateBuildRequest, on func(api.TemplateBuildEvent) error) (api.TemplateBuildResponse, error) {
	var out api.TemplateBuildResponse
	err := c.streamEvents(ctx, http.MethodPost, "/v1/templates/build", req, func(_ string, data json.RawMessage) error {
		var ev api.TemplateBuildEvent
		if json.Unmarshal(data, &ev) != nil {
			return nil // an event of a newer daemon
		}
		return on(ev)
	}, &out)
	return out, err
}
