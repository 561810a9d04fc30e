package sandbox

// The core's side of images: a create's image (ensureImage) and the
// bookkeeping that keeps an image from being removed under a sandbox
// (ImageBook). imagesvc answers sandbox::catalog::list and
// hutch::image::{status,list,pull,rm}, asking the core through its
// ImageBook.

import (
	"context"
	"os"
	"slices"
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

// ImageBook is the core's book of what uses images, for the image
// service (imagesvc's Core): the live sandboxes of each image, the pulls,
// and the guard of a removal.
type ImageBook struct{ m *Manager }

// ImageBook is the book of the images m's sandboxes use.
func (m *Manager) ImageBook() ImageBook { return ImageBook{m} }

// SetImageAllowlist puts image_allowlist list in force for the creates
// that follow (a config reload; issue 41: 4).
func (b ImageBook) SetImageAllowlist(list []string) { b.m.allowlist.Store(&list) }

// ImageAllowlist is image_allowlist as in force: the config's until a
// reload sets one.
func (b ImageBook) ImageAllowlist() []string {
	if l := b.m.allowlist.Load(); l != nil {
		return *l
	}
	return b.m.cfg.ImageAllowlist
}

// ImagesInUse counts the live sandboxes of each image name: owner's, or
// every owner's with all.
func (b ImageBook) ImagesInUse(owner string, all bool) map[string]int {
	m := b.m
	m.mu.Lock()
	defer m.mu.Unlock()
	inUse := map[string]int{}
	for _, sb := range m.sandboxes {
		if !sb.isDestroyed() && (all || sb.rec.Owner == owner) {
			inUse[sb.rec.Image]++
		}
	}
	return inUse
}

// ImagePulled records that img, catalog image name, was built or pulled
// for ctx's owner, the wait having begun at start, and discards the warm
// pool sandboxes of an older copy of it.
func (b ImageBook) ImagePulled(ctx context.Context, name string, img *image.Image, start time.Time) {
	m := b.m
	emitInstalled(ctx, m.emit, img, start)
	poolCore{m}.svc().Refresh(name, img.ID)
}

// ImageRemoval readies the removal of image name for owner: it empties
// the image's warm pools until done. The image store's guard calls guard
// holding the image's cache lock, right before it deletes: guard counts
// the live sandboxes of image id (cache id; own: owner's sandbox ids,
// sorted) and its creates, and when there are none marks the removal, and
// from then on creates see it and back off, until done.
func (b ImageBook) ImageRemoval(name, owner string) (guard func(id string) (running int, own []string, creating int), done func()) {
	m := b.m
	resume := m.pool.Pause(name)
	var marked string
	guard = func(id string) (running int, own []string, creating int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if running, own, creating = b.inUseLocked(id, owner); running > 0 || creating > 0 {
			return running, own, creating
		}
		if m.imgUse.removing == nil {
			m.imgUse.removing = map[string]bool{}
		}
		m.imgUse.removing[id] = true
		marked = id
		return 0, own, 0
	}
	done = func() {
		if marked != "" {
			m.mu.Lock()
			delete(m.imgUse.removing, marked)
			m.mu.Unlock()
		}
		resume()
	}
	return guard, done
}

// inUseLocked counts the live sandboxes of image id (own: owner's
// sandbox ids, sorted) and its creates. Manager.mu must be held.
func (b ImageBook) inUseLocked(id, owner string) (running int, own []string, creating int) {
	m := b.m
	own = []string{}
	for _, sb := range m.sandboxes {
		if sb.rec.ImageID != id || sb.isDestroyed() {
			continue
		}
		running++
		if sb.rec.Owner == owner {
			own = append(own, sb.rec.ID)
		}
	}
	slices.Sort(own)
	return running, own, m.imgUse.creating[id]
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
			emitInstalled(ctx, m.emit, img, start)
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

// emitInstalled records with emit that img was built or pulled for the
// caller, the wait having begun at start.
func emitInstalled(ctx context.Context, emit func(typ, owner, id string, data any), img *image.Image, start time.Time) {
	typ := api.EventImagePulled
	if img.Kind == image.KindPreset {
		typ = api.EventImageBuilt
	}
	emit(typ, auth.OwnerFrom(ctx), "", map[string]any{"image": img.Name, "id": img.ID, "size_bytes": img.SizeBytes,
		"duration_ms": time.Since(start).Milliseconds()})
}
