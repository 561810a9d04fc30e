package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Images is the image side of the table: the catalog and the image cache.
// The sandbox manager implements it next to Sandboxes.
type Images interface {
	Catalog(ctx context.Context, req api.CatalogRequest) (api.CatalogResponse, error)
	ImageList(ctx context.Context, req api.ImageListRequest) (api.ImageListResponse, error)
	ImagePull(ctx context.Context, req api.ImagePullRequest) (api.ImageStatus, error)
	ImageRemove(ctx context.Context, req api.ImageRemoveRequest) (api.ImageRemoveResponse, error)
}

// addImages registers the image functions when sb also implements Images.
func addImages(t *Table, sb Sandboxes) {
	im, ok := sb.(Images)
	if !ok {
		return
	}
	add(t, "sandbox::catalog::list", "List the images sandboxes can be created from", im.Catalog)
	add(t, "hutch::image::list", "List catalog images with their cache state (hutch extension)", im.ImageList)
	add(t, "hutch::image::pull", "Pull or build a catalog image into the cache (hutch extension)", im.ImagePull)
	add(t, "hutch::image::rm", "Remove a catalog image from the cache (hutch extension)", im.ImageRemove)
}
