// Package imagesvc is the image service: sandbox::catalog::list and
// hutch::image::{status,list,pull,rm} over the daemon's image store.
// Pulling and removing are operator actions (S110). What only the core knows — which
// live sandboxes run an image, its warm pools, the guard that keeps an
// image from being removed under a sandbox — it asks of the core (Core);
// a create's own image stays the core's.
package imagesvc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Store is what the service needs of the image store (image.Store).
type Store interface {
	// Catalog is the daemon's one catalog: presets, then custom images.
	Catalog() []image.Entry
	Status(name string) api.ImageStatus
	Pull(ctx context.Context, name string) (*image.Image, error)
	Remove(ctx context.Context, name string, guard func(id string) error) (bool, error)
}

// Core is what the service needs of the sandbox core (sandbox.ImageBook).
type Core interface {
	// ImagesInUse counts the live sandboxes of each image name: owner's,
	// or every owner's with all.
	ImagesInUse(owner string, all bool) map[string]int
	// ImageAllowlist is image_allowlist as in force: the images a create
	// may boot.
	ImageAllowlist() []string
	// ImagePulled records the pull of img (catalog image name) for ctx's
	// owner, begun at start, and refreshes its warm pools.
	ImagePulled(ctx context.Context, name string, img *image.Image, start time.Time)
	// ImageRemoval readies the removal of image name for owner; done ends
	// it. guard counts what uses the image (cache id) — live sandboxes,
	// own: owner's ids, and creates — and marks the removal when nothing
	// does.
	ImageRemoval(name, owner string) (guard func(id string) (running int, own []string, creating int), done func())
}

// Runtimes describes the daemon's runtimes (runtime.Set).
type Runtimes interface {
	Infos() []runtime.Info
}

// Policy is the daemon's config as the service sees it.
type Policy struct {
	// IsAdmin says whether an owner may do operator actions
	// (config.Config.IsAdmin).
	IsAdmin func(owner string) bool
}

// Service answers the image functions (functions.Images).
type Service struct {
	store  Store
	core   Core
	rts    Runtimes
	policy Policy
}

// New is the image service over the daemon's image store, its core and
// its runtimes.
func New(store Store, core Core, rts Runtimes, policy Policy) *Service {
	return &Service{store: store, core: core, rts: rts, policy: policy}
}

// Catalog is sandbox::catalog::list: presets first, then custom images
// sorted by name. Listing is not permission: image_allowlist decides what
// a create may boot.
func (s *Service) Catalog(context.Context, api.CatalogRequest) (api.CatalogResponse, error) {
	entries := s.store.Catalog()
	out := api.CatalogResponse{Images: make([]api.CatalogImage, len(entries))}
	for i, e := range entries {
		out.Images[i] = api.CatalogImage{Name: e.Name, OCIRef: e.Ref, Kind: e.Kind}
	}
	out.Runtimes = s.rts.Infos()
	return out, nil
}

// ImageStatus is hutch::image::status: the cache state of a catalog
// image (S100 for a name not in the catalog).
func (s *Service) ImageStatus(_ context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
	names := image.Names(s.store.Catalog())
	if !slices.Contains(names, req.Name) {
		return api.ImageStatus{}, errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not in the catalog; known images: %s", spec.Clip(req.Name, 128), strings.Join(names, ", "))
	}
	return s.store.Status(req.Name), nil
}

// ImageList is hutch::image::list: the catalog with each image's cache state,
// whether the allowlist admits it and how many live sandboxes run it: all
// of them for an operator, the caller's own for another owner.
func (s *Service) ImageList(ctx context.Context, _ api.ImageListRequest) (api.ImageListResponse, error) {
	inUse := s.core.ImagesInUse(auth.OwnerFrom(ctx), s.isOperator(ctx))
	entries := s.store.Catalog()
	out := api.ImageListResponse{Images: make([]api.ImageInfo, len(entries))}
	for i, e := range entries {
		st := s.store.Status(e.Name)
		out.Images[i] = api.ImageInfo{
			Name: e.Name, Kind: e.Kind, OCIRef: e.Ref,
			Allowed: slices.Contains(s.core.ImageAllowlist(), e.Name),
			State:   st.State, ID: st.ID, SizeBytes: st.SizeBytes,
			InUse: inUse[e.Name],
		}
	}
	return out, nil
}

// ImagePull is hutch::image::pull: it builds a missing preset, or resolves a
// custom image's reference again and pulls what it names now, and answers
// once the image is ready. The pull goes on if the caller goes away. It is
// an operator action (S110).
func (s *Service) ImagePull(ctx context.Context, req api.ImagePullRequest) (api.ImageStatus, error) {
	if req.Name == "" {
		return api.ImageStatus{}, errdefs.Malformed("name is required (a catalog image name)")
	}
	if err := s.operatorOnly(ctx, "pull"); err != nil {
		return api.ImageStatus{}, err
	}
	start := time.Now()
	img, err := s.store.Pull(ctx, req.Name)
	if err != nil {
		return api.ImageStatus{}, err
	}
	s.core.ImagePulled(ctx, req.Name, img, start)
	return s.store.Status(req.Name), nil
}

// ImageRemove is hutch::image::rm: it deletes a catalog image from the cache,
// refused (S111) while a sandbox runs it or is being created from it. The
// next create pulls or builds it again (auto_install) or answers S101. It
// is an operator action (S110).
func (s *Service) ImageRemove(ctx context.Context, req api.ImageRemoveRequest) (api.ImageRemoveResponse, error) {
	if req.Name == "" {
		return api.ImageRemoveResponse{}, errdefs.Malformed("name is required (a catalog image name)")
	}
	if err := s.operatorOnly(ctx, "remove"); err != nil {
		return api.ImageRemoveResponse{}, err
	}
	guard, done := s.core.ImageRemoval(req.Name, auth.OwnerFrom(ctx))
	defer done()
	removed, err := s.store.Remove(ctx, req.Name, func(id string) error {
		running, own, creating := guard(id)
		return inUse(req.Name, running, own, creating)
	})
	if err != nil {
		return api.ImageRemoveResponse{}, err
	}
	return api.ImageRemoveResponse{Name: req.Name, Removed: removed}, nil
}

// isOperator reports whether ctx's owner may do operator actions.
func (s *Service) isOperator(ctx context.Context) bool {
	return s.policy.IsAdmin(auth.OwnerFrom(ctx))
}

// operatorOnly refuses action on the shared image cache (S110) unless
// ctx's owner is an operator.
func (s *Service) operatorOnly(ctx context.Context, action string) error {
	if s.isOperator(ctx) {
		return nil
	}
	return errdefs.New(errdefs.CodeOperatorOnly, "only an operator may %s cached images: they are shared by every owner's sandboxes", action).
		WithFix(nil, "ask the operator, or have your owner added to admin_owners in the daemon's config")
}

// inUse refuses (S111) the removal of image name while running sandboxes
// run it or creating ones are being created from it. The message counts
// them; only the remover's own sandbox ids (own) are named, never another
// owner's.
func inUse(name string, running int, own []string, creating int) error {
	if running == 0 && creating == 0 {
		return nil
	}
	var what []string
	if running > 0 {
		w := fmt.Sprintf("%d sandboxes", running)
		if len(own) > 0 {
			w += " (yours: " + strings.Join(own, ", ") + ")"
		}
		what = append(what, w)
	}
	if creating > 0 {
		what = append(what, fmt.Sprintf("%d sandboxes being created", creating))
	}
	return errdefs.New(errdefs.CodeImageInUse, "image %s is in use by %s", name, strings.Join(what, " and ")).
		WithFix(map[string]any{"sandbox_ids": own}, "stop the sandboxes that use it (hutch stop ID), then remove it")
}
