package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// ListEnv runs sandbox::env::list.
func (c *Client) ListEnv(ctx context.Context, id string) (api.EnvResponse, error) {
	return sandboxGet[api.EnvResponse](ctx, c, id, "/env")
}

// GetEnv runs sandbox::env::get.
func (c *Client) GetEnv(ctx context.Context, id, key string) (api.EnvValue, error) {
	return sandboxGet[api.EnvValue](ctx, c, id, "/env/"+url.PathEscape(key))
}

// SetEnv runs sandbox::env::set.
func (c *Client) SetEnv(ctx context.Context, id string, env api.Env) (api.EnvResponse, error) {
	return sandboxCall[api.EnvResponse](ctx, c, id, "/env", api.EnvSetRequest{SandboxID: id, Env: env})
}

// DeleteEnv runs sandbox::env::delete for one variable.
func (c *Client) DeleteEnv(ctx context.Context, id, key string) (api.EnvResponse, error) {
	var out api.EnvResponse
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodDelete, p+"/env/"+url.PathEscape(key), nil, &out)
}
