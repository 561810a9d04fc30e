package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Images is the image side of the table: the catalog and the image cache.
// The image service implements it (Deps.Images, imagesvc).
type Images interface {
	Catalog(ctx context.Context, req api.CatalogRequest) (api.CatalogResponse, error)
	ImageStatus(ctx context.Context, req api.ImageStatusRequest) (api.ImageStatus, error)
	ImageList(ctx context.Context, req api.ImageListRequest) (api.ImageListResponse, error)
	ImagePull(ctx context.Context, req api.ImagePullRequest) (api.ImageStatus, error)
	ImageRemove(ctx context.Context, req api.ImageRemoveRequest) (api.ImageRemoveResponse, error)
}

// registerImages adds the image functions when the table has Images.
func registerImages(t *Table) {
	im := t.deps.Images
	if im == nil {
		return
	}
	add(t, api.FnCatalogList, "List the images sandboxes can be created from", im.Catalog)
	add(t, api.FnImageStatus, "Cache state of a catalog image (hutch extension)", im.ImageStatus)
	add(t, api.FnImageList, "List catalog images with their cache state (hutch extension)", im.ImageList)
	add(t, api.FnImagePull, "Pull or build a catalog image into the cache (hutch extension)", im.ImagePull)
	add(t, api.FnImageRemove, "Remove a catalog image from the cache (hutch extension)", im.ImageRemove)
}
