package image

import (
	"context"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// pullCustom resolves custom image name for this host, pulls and unpacks
// it unless the cache holds its manifest digest already, and records what
// the reference resolved to. Errors are S102.
func (s *Store) pullCustom(ctx context.Context, name string, c customImage, f *flight) (*Image, error) {
	log := s.log.With("image", name, "ref", c.ref)
	fail := func(err error) (*Image, error) {
		log.Error("image pull failed", "err", err, "elapsed", time.Since(f.started).Round(time.Millisecond))
		if errdefs.Is(err, errdefs.CodeImagePull) {
			e := *errdefs.As(err)
			e.Message = "pulling image " + name + ": " + e.Message
			return nil, &e
		}
		return nil, errdefs.Wrap(errdefs.CodeImagePull, err, "pulling image "+name)
	}
	f.setDetail("resolving " + c.ref)
	img, err := c.src.image(ctx, s.host)
	if err != nil {
		return fail(err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fail(err)
	}
	id := digest.Hex
	log = log.With("id", id[:12])
	unlock, err := s.cache.lock(ctx, id, log)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	cached, err := s.cache.load(id)
	if err != nil {
		cfg, diffIDs, err := imageConfig(img)
		if err != nil {
			return fail(err)
		}
		log.Info("pulling image", "digest", digest.String())
		cached, err = s.cache.create(Image{Name: name, Kind: KindCustom, Ref: c.ref, ID: id, Config: cfg},
			func(rootfs string) error {
				return unpackImage(ctx, img, diffIDs, cfg, rootfs, s.maxUnpacked, log, f.setDetail)
			})
		if err != nil {
			return fail(err)
		}
		log.Info("image pulled", "elapsed", time.Since(f.started).Round(time.Millisecond),
			"size_mb", cached.SizeBytes>>20, "rootfs", cached.Rootfs)
	}
	if err := s.cache.storeRef(c.ref, s.host, id); err != nil {
		return fail(err)
	}
	cached.Name, cached.Kind, cached.Ref = name, KindCustom, c.ref
	return cached, nil
}
