package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// Catalog runs sandbox::catalog::list: presets first, then custom images.
func (c *Client) Catalog(ctx context.Context) (api.CatalogResponse, error) {
	var out api.CatalogResponse
	return out, c.do(ctx, http.MethodGet, "/v1/catalog", nil, &out)
}

// Images runs hutch::image::list: the catalog with each image's cache state.
func (c *Client) Images(ctx context.Context) (api.ImageListResponse, error) {
	var out api.ImageListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/images", nil, &out)
}

// PullImage runs hutch::image::pull and returns once catalog image name is
// cached (ImageStatus shows the progress meanwhile).
func (c *Client) PullImage(ctx context.Context, name string) (api.ImageStatus, error) {
	var out api.ImageStatus
	p, err := imagePath(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p, nil, &out)
}

// RemoveImage runs hutch::image::rm; the daemon refuses (S001) while a
// sandbox uses the image.
func (c *Client) RemoveImage(ctx context.Context, name string) (api.ImageRemoveResponse, error) {
	var out api.ImageRemoveResponse
	p, err := imagePath(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodDelete, p, nil, &out)
}

func imagePath(name string) (string, error) {
	if name == "" {
		return "", errors.New("image name is empty")
	}
	return "/v1/images/" + url.PathEscape(name), nil
}
