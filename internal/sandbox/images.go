package sandbox

// The catalog and image-cache side of the manager: sandbox::catalog::list,
// hutch::image::{list,pull,rm}, and the bookkeeping that keeps an image from
// being removed under a sandbox.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
)

// imageUse tracks images by id between a create's image resolution and
// its sandbox's registration (the sandbox is then found in sandboxes), and
// the removals in progress. Guarded by Manager.mu.
type imageUse struct {
	creating map[string]int
	removing map[string]bool
}

// catalog lists the image names the daemon knows, presets first.
func (m *Manager) catalog() []string {
	entries := m.images.Catalog()
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}

// withFix is the hint of S242 for a command the sandbox's image lacks: the
// images the caller may create that have it.
func (m *Manager) withFix(command string) string {
	var names []string
	for _, n := range m.images.With(command) {
		if slices.Contains(m.cfg.ImageAllowlist, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "install " + command + " in the sandbox (no image this daemon allows has it)"
	}
	return "use an image with " + command + " (" + strings.Join(names, ", ") + "), or install it"
}

// Catalog is sandbox::catalog::list: presets first, then custom images
// sorted by name. Listing is not permission: image_allowlist decides what
// a create may boot.
func (m *Manager) Catalog(context.Context, api.CatalogRequest) (api.CatalogResponse, error) {
	entries := m.images.Catalog()
	out := api.CatalogResponse{Images: make([]api.CatalogImage, len(entries))}
	for i, e := range entries {
		out.Images[i] = api.CatalogImage{Name: e.Name, OCIRef: e.Ref, Kind: e.Kind}
	}
	out.Runtimes = m.rts.Infos()
	return out, nil
}

// ImageList is hutch::image::list: the catalog with each image's cache state,
// whether the allowlist admits it and how many live sandboxes run it: all
// of them for an operator, the caller's own for another owner.
func (m *Manager) ImageList(ctx context.Context, _ api.ImageListRequest) (api.ImageListResponse, error) {
	owner, all := auth.OwnerFrom(ctx), m.isOperator(ctx)
	m.mu.Lock()
	inUse := map[string]int{}
	for _, sb := range m.sandboxes {
		if !sb.isDestroyed() && (all || sb.rec.Owner == owner) {
			inUse[sb.rec.Image]++
		}
	}
	m.mu.Unlock()
	entries := m.images.Catalog()
	out := api.ImageListResponse{Images: make([]api.ImageInfo, len(entries))}
	for i, e := range entries {
		st := m.images.Status(e.Name)
		out.Images[i] = api.ImageInfo{
			Name: e.Name, Kind: e.Kind, OCIRef: e.Ref,
			Allowed: slices.Contains(m.cfg.ImageAllowlist, e.Name),
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
func (m *Manager) ImagePull(ctx context.Context, req api.ImagePullRequest) (api.ImageStatus, error) {
	if req.Name == "" {
		return api.ImageStatus{}, errdefs.Malformed("name is required (a catalog image name)")
	}
	if err := m.operatorOnly(ctx, "pull"); err != nil {
		return api.ImageStatus{}, err
	}
	start := time.Now()
	img, err := m.images.Pull(ctx, req.Name)
	if err != nil {
		return api.ImageStatus{}, err
	}
	m.emitInstalled(ctx, img, start)
	m.refreshWarm(req.Name, img.ID)
	return m.images.Status(req.Name), nil
}

// ImageRemove is hutch::image::rm: it deletes a catalog image from the cache,
// refused (S111) while a sandbox runs it or is being created from it. The
// next create pulls or builds it again (auto_install) or answers S101. It
// is an operator action (S110).
func (m *Manager) ImageRemove(ctx context.Context, req api.ImageRemoveRequest) (api.ImageRemoveResponse, error) {
	if req.Name == "" {
		return api.ImageRemoveResponse{}, errdefs.Malformed("name is required (a catalog image name)")
	}
	if err := m.operatorOnly(ctx, "remove"); err != nil {
		return api.ImageRemoveResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	// No warm pool sandbox may hold the image while it goes.
	defer m.pauseWarm(req.Name)()
	var marked string
	defer func() {
		if marked != "" {
			m.mu.Lock()
			delete(m.imgUse.removing, marked)
			m.mu.Unlock()
		}
	}()
	// The store calls guard holding the image's cache lock, right before
	// it deletes: from then on creates see the removal and back off.
	guard := func(id string) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.imageInUseLocked(req.Name, id, owner); err != nil {
			return err
		}
		if m.imgUse.removing == nil {
			m.imgUse.removing = map[string]bool{}
		}
		m.imgUse.removing[id] = true
		marked = id
		return nil
	}
	removed, err := m.images.Remove(ctx, req.Name, guard)
	if err != nil {
		return api.ImageRemoveResponse{}, err
	}
	return api.ImageRemoveResponse{Name: req.Name, Removed: removed}, nil
}

// imageInUseLocked refuses (S111) the removal of image name (cache id) for
// owner while sandboxes run it or are being created from it. The message
// counts them; only owner's own sandbox ids are named, never another
// owner's. m.mu must be held.
func (m *Manager) imageInUseLocked(name, id, owner string) error {
	running, own := 0, []string{}
	for _, sb := range m.sandboxes {
		if sb.rec.ImageID != id || sb.isDestroyed() {
			continue
		}
		running++
		if sb.rec.Owner == owner {
			own = append(own, sb.rec.ID)
		}
	}
	creating := m.imgUse.creating[id]
	if running == 0 && creating == 0 {
		return nil
	}
	slices.Sort(own)
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

// isOperator reports whether ctx's owner may do operator actions
// (config.IsAdmin).
func (m *Manager) isOperator(ctx context.Context) bool {
	return m.cfg.IsAdmin(auth.OwnerFrom(ctx))
}

// operatorOnly refuses action on the shared image cache (S110) unless
// ctx's owner is an operator.
func (m *Manager) operatorOnly(ctx context.Context, action string) error {
	if m.isOperator(ctx) {
		return nil
	}
	return errdefs.New(errdefs.CodeOperatorOnly, "only an operator may %s cached images: they are shared by every owner's sandboxes", action).
		WithFix(nil, "ask the operator, or have your owner added to admin_owners in the daemon's config")
}

// ensureImage gets a create's image (S101/S102 from the store) and holds
// it against removal until release, which the caller calls once the
// sandbox is registered or the create failed.
func (m *Manager) ensureImage(ctx context.Context, name string) (img *image.Image, release func(), err error) {
	for attempt := 0; ; attempt++ {
		start, missing := time.Now(), m.images.Status(name).State != image.StateReady
		img, err := m.images.Ensure(ctx, name, m.cfg.AutoInstall)
		if err != nil {
			return nil, nil, err
		}
		if missing {
			m.emitInstalled(ctx, img, start)
		}
		m.mu.Lock()
		if m.imgUse.removing[img.ID] {
			m.mu.Unlock()
			return nil, nil, errdefs.New(errdefs.CodeImagePull, "image %s is being removed from the cache; retry", name)
		}
		m.imgUse.creating = inc(m.imgUse.creating, img.ID)
		m.mu.Unlock()
		release := func() {
			m.mu.Lock()
			dec(m.imgUse.creating, img.ID)
			m.mu.Unlock()
		}
		// A removal that finished between Ensure and the count above took
		// the rootfs; none can start now. Ensure again (it pulls anew).
		if _, err := os.Stat(img.Rootfs); err == nil {
			return img, release, nil
		}
		release()
		if attempt > 0 {
			return nil, nil, errdefs.New(errdefs.CodeImagePull, "image %s vanished from the cache while the sandbox was created; retry", name)
		}
	}
}

// isDestroyed reports whether sb's teardown is over: until then its
// runtime may still hold the image's root filesystem.
func (sb *sandbox) isDestroyed() bool {
	select {
	case <-sb.destroyed:
		return true
	default:
		return false
	}
}

// emitInstalled records that img was built or pulled for the caller, the
// wait having begun at start.
func (m *Manager) emitInstalled(ctx context.Context, img *image.Image, start time.Time) {
	typ := api.EventImagePulled
	if img.Kind == image.KindPreset {
		typ = api.EventImageBuilt
	}
	m.emit(typ, auth.OwnerFrom(ctx), "", map[string]any{"image": img.Name, "id": img.ID, "size_bytes": img.SizeBytes,
		"duration_ms": time.Since(start).Milliseconds()})
}
