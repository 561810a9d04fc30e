package client

import (
	"context"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// ReloadPath is the daemon's route of a config reload.
const ReloadPath = "/v1/admin/reload"

// AdminReload makes the daemon read its config file (and TLS files) again
// and apply what can change live; an operator's call.
func (c *Client) AdminReload(ctx context.Context) (api.ReloadResult, error) {
	var out api.ReloadResult
	return out, c.do(ctx, http.MethodPost, ReloadPath, nil, &out)
}
