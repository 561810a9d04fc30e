package client

import (
	"context"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// Quota runs sandbox::quota: the caller's use against its limits.
func (c *Client) Quota(ctx context.Context) (api.QuotaResponse, error) {
	var out api.QuotaResponse
	return out, c.do(ctx, http.MethodGet, "/v1/quota", nil, &out)
}
