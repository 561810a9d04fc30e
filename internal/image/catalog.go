package image

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Entry is one image of the catalog.
type Entry struct {
	// Name is the catalog name callers pass as a create's image.
	Name string
	// Kind is KindPreset or KindCustom.
	Kind string
	// Ref is the image's source: a preset's recipe in short, a custom
	// image's reference as configured.
	Ref string
}

// customImage is a catalog image pulled from an OCI reference.
type customImage struct {
	ref string
	src source
}

// addCustom registers the custom images of the configuration (name → ref).
// A name that shadows a preset, or a reference that does not parse, is an
// error naming the key: the daemon must not start with it.
func (s *Store) addCustom(images map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(images)) {
		ref := images[name]
		if _, ok := s.presets[name]; ok {
			return fmt.Errorf("custom_images key %q shadows the preset of that name; choose another name", name)
		}
		src, err := parseSource(ref)
		if err != nil {
			return fmt.Errorf("custom_images.%s: %w", name, err)
		}
		s.custom[name] = customImage{ref: ref, src: src}
		s.customNames = append(s.customNames, name)
	}
	return nil
}

// Names are the image names of entries, in their order.
func Names(entries []Entry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}

// Catalog lists the images the store knows: the presets in their order,
// then the custom images sorted by name. It is the daemon's one catalog.
func (s *Store) Catalog() []Entry {
	out := make([]Entry, 0, len(s.names)+len(s.customNames))
	for _, n := range s.names {
		out = append(out, Entry{Name: n, Kind: KindPreset, Ref: s.presets[n].ref})
	}
	for _, n := range s.customNames {
		out = append(out, Entry{Name: n, Kind: KindCustom, Ref: s.custom[n].ref})
	}
	return out
}

// kindOf is the kind of catalog image name, "" when it is not one.
func (s *Store) kindOf(name string) string {
	if _, ok := s.presets[name]; ok {
		return KindPreset
	}
	if _, ok := s.custom[name]; ok {
		return KindCustom
	}
	return ""
}

// jobFor returns what builds or pulls image name; S100 when the catalog
// has no such image.
func (s *Store) jobFor(name string) (job, error) {
	if p, ok := s.presets[name]; ok {
		return func(ctx context.Context, f *flight) (*Image, error) { return s.buildPreset(ctx, name, p, f) }, nil
	}
	if c, ok := s.custom[name]; ok {
		return func(ctx context.Context, f *flight) (*Image, error) { return s.pullCustom(ctx, name, c, f) }, nil
	}
	names := make([]string, 0, len(s.names)+len(s.customNames))
	for _, e := range s.Catalog() {
		names = append(names, e.Name)
	}
	return nil, errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not in the catalog; known images: %s", clipName(name), strings.Join(names, ", "))
}

// Pull brings image name into the cache, as Ensure with install does, but
// a custom image's reference is resolved again even when an image is
// cached: a tag that moved gets its new image. A preset is built when it
// is missing (its recipe hash already names its content).
func (s *Store) Pull(ctx context.Context, name string) (*Image, error) {
	j, err := s.jobFor(name)
	if err != nil {
		return nil, err
	}
	if s.kindOf(name) == KindPreset {
		if img, ok := s.Lookup(name); ok {
			return img, nil
		}
	}
	return s.await(ctx, name, j, false)
}

// Remove deletes image name from the cache: its root filesystem and, for a
// custom image, the record of what its reference resolved to. Catalog
// names that share the same content become missing too. guard, when not
// nil, is called with the image's id while Remove holds the image's cache
// lock, right before deleting; an error from it (the image is in use)
// stops the removal and is returned. removed is false when there was
// nothing cached.
//
// Errors: S100 for a name outside the catalog, S001 while the image is
// being built or pulled, guard's.
func (s *Store) Remove(ctx context.Context, name string, guard func(id string) error) (removed bool, err error) {
	if _, err := s.jobFor(name); err != nil {
		return false, err
	}
	s.mu.Lock()
	_, busy := s.flights[name]
	s.mu.Unlock()
	if busy {
		return false, errdefs.Malformed("image %s is being built or pulled; remove it once that is done", name).
			WithFix(nil, "wait for the pull to finish (`hutch image ls` shows it), then retry")
	}
	img, ok := s.Lookup(name)
	if !ok {
		return false, nil
	}
	log := s.log.With("image", name, "id", img.ID[:12])
	unlock, err := s.cache.lock(ctx, img.ID, log)
	if err != nil {
		return false, fmt.Errorf("removing image %s: %w", name, err)
	}
	defer unlock()
	if guard != nil {
		if err := guard(img.ID); err != nil {
			return false, err
		}
	}
	if c, ok := s.custom[name]; ok {
		if err := s.cache.removeRef(c.ref, s.host); err != nil {
			return false, fmt.Errorf("removing image %s: %w", name, err)
		}
	}
	s.mu.Lock()
	for n, r := range s.ready {
		if r.ID == img.ID {
			delete(s.ready, n)
		}
	}
	s.mu.Unlock()
	if err := s.cache.remove(img.ID); err != nil {
		return false, fmt.Errorf("removing image %s: %w", name, err)
	}
	log.Info("image removed")
	return true, nil
}

// clipName shortens a caller-given name for an error message.
func clipName(name string) string {
	if len(name) > 128 {
		return name[:128] + "…"
	}
	return name
}
