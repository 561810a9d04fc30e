package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// SetSecret runs sandbox::secret::set; the value is never returned.
func (c *Client) SetSecret(ctx context.Context, name, value string) (api.SecretInfo, error) {
	var out api.SecretInfo
	return out, c.do(ctx, http.MethodPost, "/v1/secrets", api.SecretSetRequest{Name: name, Value: value}, &out)
}

// ListSecrets runs sandbox::secret::list.
func (c *Client) ListSecrets(ctx context.Context) (api.SecretListResponse, error) {
	var out api.SecretListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/secrets", nil, &out)
}

// DeleteSecret runs sandbox::secret::delete.
func (c *Client) DeleteSecret(ctx context.Context, name string) (api.SecretInfo, error) {
	var out api.SecretInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/secrets/"+url.PathEscape(name), nil, &out)
}

// EgressLog runs sandbox::network::egress: the egress proxy's recent
// decisions about a sandbox.
func (c *Client) EgressLog(ctx context.Context, sandboxID string) (api.EgressLogResponse, error) {
	var out api.EgressLogResponse
	return out, c.do(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(sandboxID)+"/egress", nil, &out)
}
