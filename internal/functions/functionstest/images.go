package functionstest

import (
	"context"
	"slices"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

var _ functions.Images = (*Fake)(nil)

// FakeCatalog is the catalog the fake's image functions know: the presets.
var FakeCatalog = []api.CatalogImage{
	{Name: "python", OCIRef: "debian:bookworm+ca-certificates+python3", Kind: "preset"},
	{Name: "node", OCIRef: "debian:bookworm+ca-certificates+nodejs", Kind: "preset"},
}

// Catalog returns FakeCatalog.
func (f *Fake) Catalog(_ context.Context, req api.CatalogRequest) (api.CatalogResponse, error) {
	f.record("Catalog", req)
	return api.CatalogResponse{Images: append([]api.CatalogImage(nil), FakeCatalog...), Runtimes: []api.RuntimeInfo{
		{Name: "gvisor", Mode: "systrap", Abilities: "pause", Available: true, Default: true},
		{Name: "microvm", Abilities: "none", Unavailable: "qemu-system-x86_64 not found"},
	}}, nil
}

// ImageList reports every image of FakeCatalog ready and allowed.
func (f *Fake) ImageList(_ context.Context, req api.ImageListRequest) (api.ImageListResponse, error) {
	f.record("ImageList", req)
	out := api.ImageListResponse{Images: []api.ImageInfo{}}
	for _, im := range FakeCatalog {
		out.Images = append(out.Images, api.ImageInfo{Name: im.Name, Kind: im.Kind, OCIRef: im.OCIRef, Allowed: true, State: "ready"})
	}
	return out, nil
}

// ImagePull reports a catalog image ready, and S100 for any other name.
func (f *Fake) ImagePull(_ context.Context, req api.ImagePullRequest) (api.ImageStatus, error) {
	f.record("ImagePull", req)
	if !fakeKnows(req.Name) {
		return api.ImageStatus{}, errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not in the catalog", req.Name)
	}
	return api.ImageStatus{Name: req.Name, State: "ready", ID: "0123456789abcdef", SizeBytes: 1 << 20}, nil
}

// ImageRemove removes a catalog image, and answers S100 for any other name.
func (f *Fake) ImageRemove(_ context.Context, req api.ImageRemoveRequest) (api.ImageRemoveResponse, error) {
	f.record("ImageRemove", req)
	if !fakeKnows(req.Name) {
		return api.ImageRemoveResponse{}, errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not in the catalog", req.Name)
	}
	return api.ImageRemoveResponse{Name: req.Name, Removed: true}, nil
}

func fakeKnows(name string) bool {
	return slices.ContainsFunc(FakeCatalog, func(im api.CatalogImage) bool { return im.Name == name })
}
