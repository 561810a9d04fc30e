package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// CreateNetwork runs sandbox::network::create.
func (c *Client) CreateNetwork(ctx context.Context, name string) (api.NetworkInfo, error) {
	var out api.NetworkInfo
	return out, c.do(ctx, http.MethodPost, "/v1/networks", api.NetworkCreateRequest{Name: name}, &out)
}

// ListNetworks runs sandbox::network::list.
func (c *Client) ListNetworks(ctx context.Context) (api.NetworkListResponse, error) {
	var out api.NetworkListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/networks", nil, &out)
}

// DeleteNetwork runs sandbox::network::delete.
func (c *Client) DeleteNetwork(ctx context.Context, name string) (api.NetworkInfo, error) {
	var out api.NetworkInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/networks/"+url.PathEscape(name), nil, &out)
}

// ConnectNetwork runs sandbox::network::connect.
func (c *Client) ConnectNetwork(ctx context.Context, network, sandboxID string) (api.NetworkInfo, error) {
	var out api.NetworkInfo
	return out, c.do(ctx, http.MethodPost, "/v1/networks/"+url.PathEscape(network)+"/members", api.NetworkConnectRequest{SandboxID: sandboxID}, &out)
}

// DisconnectNetwork runs sandbox::network::disconnect.
func (c *Client) DisconnectNetwork(ctx context.Context, network, sandboxID string) (api.NetworkInfo, error) {
	var out api.NetworkInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/networks/"+url.PathEscape(network)+"/members/"+url.PathEscape(sandboxID), nil, &out)
}

// UpdateNetwork runs sandbox::network::update: the sandbox's new egress
// policy.
func (c *Client) UpdateNetwork(ctx context.Context, sandboxID string, policy api.EgressPolicy) (api.SandboxNetwork, error) {
	return sandboxCall[api.SandboxNetwork](ctx, c, sandboxID, "/network", policy)
}
