package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// CreateVolume runs sandbox::volume::create; sizeMB 0 is the daemon's
// default size.
func (c *Client) CreateVolume(ctx context.Context, name string, sizeMB uint64) (api.VolumeInfo, error) {
	var out api.VolumeInfo
	return out, c.do(ctx, http.MethodPost, "/v1/volumes", api.VolumeCreateRequest{Name: name, SizeMB: sizeMB}, &out)
}

// ListVolumes runs sandbox::volume::list.
func (c *Client) ListVolumes(ctx context.Context) (api.VolumeListResponse, error) {
	var out api.VolumeListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/volumes", nil, &out)
}

// GetVolume runs sandbox::volume::get.
func (c *Client) GetVolume(ctx context.Context, name string) (api.VolumeInfo, error) {
	var out api.VolumeInfo
	return out, c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(name), nil, &out)
}

// DeleteVolume runs sandbox::volume::delete.
func (c *Client) DeleteVolume(ctx context.Context, name string) (api.VolumeDeleteResponse, error) {
	var out api.VolumeDeleteResponse
	return out, c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name), nil, &out)
}
