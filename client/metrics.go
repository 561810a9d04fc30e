package client

import (
	"context"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// Metrics reports a live sandbox's resource use (sandbox::metrics): CPU
// seconds, memory and host tasks, read from its cgroups.
func (c *Client) Metrics(ctx context.Context, id string) (api.MetricsResponse, error) {
	var out api.MetricsResponse
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p+"/metrics", nil, &out)
}
