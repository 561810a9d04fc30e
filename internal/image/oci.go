package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// Prefixes of custom image references that name local files rather than a
// registry.
const (
	prefixOCILayout     = "oci-layout:"
	prefixDockerArchive = "docker-archive:"
)

// annotationRefName tags a manifest of an OCI layout's index.json.
const annotationRefName = "org.opencontainers.image.ref.name"

// maxIndexDepth bounds indexes nested in indexes.
const maxIndexDepth = 4

// source is where a custom image comes from: a registry reference, an OCI
// layout directory (optionally one tag of it) or a `docker save` tarball.
type source struct {
	ref     name.Reference // registry image, or nil
	layout  string         // OCI layout directory, or ""
	tag     string         // the layout tag wanted, or "" for its only image
	archive string         // docker-archive tarball, or ""
}

// parseSource parses a custom_images reference.
func parseSource(ref string) (source, error) {
	var src source
	switch {
	case strings.HasPrefix(ref, prefixOCILayout):
		p := strings.TrimPrefix(ref, prefixOCILayout)
		// A ":tag" after the last slash names one image of the layout.
		if i := strings.LastIndexByte(p, ':'); i > strings.LastIndexByte(p, '/') {
			p, src.tag = p[:i], p[i+1:]
			if src.tag == "" {
				return src, fmt.Errorf("%q: empty tag after the last colon", ref)
			}
		}
		if !path.IsAbs(p) {
			return src, fmt.Errorf("%q: the layout directory must be an absolute path", ref)
		}
		src.layout = path.Clean(p)
	case strings.HasPrefix(ref, prefixDockerArchive):
		p := strings.TrimPrefix(ref, prefixDockerArchive)
		if !path.IsAbs(p) {
			return src, fmt.Errorf("%q: the archive must be an absolute path", ref)
		}
		src.archive = path.Clean(p)
	default:
		r, err := name.ParseReference(ref)
		if err != nil {
			return src, fmt.Errorf("%q is not an image reference (host/repo:tag, host/repo@sha256:..., %s/path[:tag] or %s/path.tar): %w",
				ref, prefixOCILayout, prefixDockerArchive, err)
		}
		src.ref = r
	}
	return src, nil
}

// hostPlatform is the platform this host runs images of.
func hostPlatform() v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if runtime.GOARCH == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// platformString renders p as os/arch[/variant].
func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// runsOn reports whether an image built for p runs on host. A variant the
// image leaves out matches any.
func runsOn(p, host v1.Platform) bool {
	return p.OS == host.OS && p.Architecture == host.Architecture &&
		(p.Variant == "" || p.Variant == host.Variant)
}

// image resolves the source to the one image to run on host: an index
// (multi-platform image) yields its entry for host's platform. Only
// manifests are read; layers are fetched when unpacked.
func (src source) image(ctx context.Context, host v1.Platform) (v1.Image, error) {
	switch {
	case src.layout != "":
		return src.layoutImage(host)
	case src.archive != "":
		img, err := tarball.ImageFromPath(src.archive, nil)
		if err != nil {
			return nil, fmt.Errorf("reading docker archive %s: %w", src.archive, err)
		}
		return img, checkImagePlatform(img, host)
	}
	desc, err := remote.Get(src.ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("hutch"))
	if err != nil {
		return nil, explainRegistryError(src.ref, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		return imageForPlatform(idx, host, 0)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	return img, checkImagePlatform(img, host)
}

// layoutImage picks the image of an OCI layout directory.
func (src source) layoutImage(host v1.Platform) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(src.layout)
	if err != nil {
		return nil, fmt.Errorf("reading OCI layout %s: %w", src.layout, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading OCI layout %s: %w", src.layout, err)
	}
	descs := im.Manifests
	if src.tag != "" {
		var tags []string
		descs = nil
		for _, d := range im.Manifests {
			t := d.Annotations[annotationRefName]
			if t == src.tag || strings.HasSuffix(t, ":"+src.tag) {
				descs = append(descs, d)
			} else if t != "" {
				tags = append(tags, t)
			}
		}
		if len(descs) == 0 {
			return nil, fmt.Errorf("OCI layout %s has no image tagged %q (tags: %s)", src.layout, src.tag, listOrNone(tags))
		}
	}
	switch {
	case len(descs) == 0:
		return nil, fmt.Errorf("OCI layout %s holds no image", src.layout)
	case len(descs) == 1 && descs[0].MediaType.IsIndex():
		child, err := idx.ImageIndex(descs[0].Digest)
		if err != nil {
			return nil, err
		}
		return imageForPlatform(child, host, 1)
	case len(descs) == 1:
		img, err := childImage(idx, descs[0])
		if err != nil {
			return nil, err
		}
		return img, checkImagePlatform(img, host)
	}
	// Several images: they must be the platforms of one image.
	for _, d := range descs {
		if d.Platform == nil {
			return nil, fmt.Errorf("OCI layout %s holds %d images; name one with %s%s:TAG", src.layout, len(descs), prefixOCILayout, src.layout)
		}
	}
	return pickPlatform(idx, descs, host, 0)
}

// childImage opens image d of an index and checks that its manifest is
// the one d names (registries are checked by go-containerregistry too; an
// OCI layout's files are not otherwise verified).
func childImage(idx v1.ImageIndex, d v1.Descriptor) (v1.Image, error) {
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, err
	}
	got, err := img.Digest()
	if err != nil {
		return nil, err
	}
	if got != d.Digest {
		return nil, fmt.Errorf("manifest %s is corrupt: its content hashes to %s", d.Digest, got)
	}
	return img, nil
}

// imageForPlatform picks host's image of an index.
func imageForPlatform(idx v1.ImageIndex, host v1.Platform, depth int) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading image index: %w", err)
	}
	return pickPlatform(idx, im.Manifests, host, depth)
}

// pickPlatform returns the first image of descs built for host, looking
// into nested indexes; none is S102 naming what there is and what the
// host needs.
func pickPlatform(idx v1.ImageIndex, descs []v1.Descriptor, host v1.Platform, depth int) (v1.Image, error) {
	var seen []string
	for _, d := range descs {
		if d.MediaType.IsIndex() && depth < maxIndexDepth {
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			img, err := imageForPlatform(child, host, depth+1)
			if err == nil || !errdefs.Is(err, errdefs.CodeImagePull) {
				return img, err
			}
			continue
		}
		if d.Platform == nil || !d.MediaType.IsImage() {
			continue
		}
		if d.Platform.OS == "unknown" {
			continue // attestation manifests of buildkit
		}
		if runsOn(*d.Platform, host) {
			return childImage(idx, d)
		}
		seen = append(seen, platformString(*d.Platform))
	}
	return nil, noPlatformError(host, seen)
}

// checkImagePlatform refuses a single-platform image built for another
// platform than host. An image whose config names no platform passes.
func checkImagePlatform(img v1.Image, host v1.Platform) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading image config: %w", err)
	}
	p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if p.OS == "" && p.Architecture == "" {
		return nil
	}
	if !runsOn(p, host) {
		return noPlatformError(host, []string{platformString(p)})
	}
	return nil
}

// noPlatformError is the S102 of an image with no manifest for host.
func noPlatformError(host v1.Platform, seen []string) error {
	slices.Sort(seen)
	seen = slices.Compact(seen)
	return errdefs.New(errdefs.CodeImagePull, "no %s manifest in the image (it has: %s)", platformString(host), listOrNone(seen)).
		WithFix(map[string]any{"platform": platformString(host)},
			"this host is "+platformString(host)+": use a reference with a "+platformString(host)+" image, or build one with --platform "+platformString(host))
}

// explainRegistryError adds what to do to the registry errors people meet.
func explainRegistryError(ref name.Reference, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: %w (set credentials for %s in the Docker config file of the user running hutch serve: $DOCKER_CONFIG/config.json or ~/.docker/config.json)",
				ref, err, ref.Context().RegistryStr())
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w (no such repository or tag)", ref, err)
		}
	}
	return fmt.Errorf("%s: %w", ref, err)
}

// imageConfig reads the image's config, checks it against the digest the
// manifest gives it, and returns the part sandboxes honour along with the
// layers' expected uncompressed digests.
func imageConfig(img v1.Image) (Config, []v1.Hash, error) {
	raw, err := img.RawConfigFile()
	if err != nil {
		return Config{}, nil, fmt.Errorf("reading image config: %w", err)
	}
	want, err := img.ConfigName()
	if err != nil {
		return Config{}, nil, fmt.Errorf("reading image manifest: %w", err)
	}
	sum := sha256.Sum256(raw)
	if want.Algorithm != "sha256" || want.Hex != hex.EncodeToString(sum[:]) {
		return Config{}, nil, fmt.Errorf("image config %s is corrupt: its content hashes to sha256:%x", want, sum)
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return Config{}, nil, fmt.Errorf("parsing image config: %w", err)
	}
	cfg := Config{
		Env:  slices.Clone(cf.Config.Env),
		User: cf.Config.User,
	}
	if wd := cf.Config.WorkingDir; wd != "" {
		cfg.WorkingDir = path.Join("/", wd)
	}
	return cfg, cf.RootFS.DiffIDs, nil
}

// unpackImage verifies and unpacks img's layers, in order, into rootfs
// (which must not exist), at most maxBytes in all, reporting progress. Each layer's uncompressed
// content must hash to the diff_id of the verified config, so a corrupt or
// substituted blob fails the unpack whatever its source.
func unpackImage(ctx context.Context, img v1.Image, diffIDs []v1.Hash, cfg Config, rootfs string, maxBytes int64, log *slog.Logger, progress func(string)) error {
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("reading image manifest: %w", err)
	}
	if len(layers) != len(diffIDs) {
		return fmt.Errorf("image manifest has %d layers but its config lists %d", len(layers), len(diffIDs))
	}
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return fmt.Errorf("creating rootfs: %w", err)
	}
	if err := os.Chmod(rootfs, 0o755); err != nil { // whatever the umask
		return fmt.Errorf("creating rootfs: %w", err)
	}
	up, err := newUnpacker(rootfs, maxBytes, log)
	if err != nil {
		return err
	}
	defer up.Close()
	for i, l := range layers {
		if err := unpackLayer(ctx, up, l, diffIDs[i], fmt.Sprintf("layer %d/%d", i+1, len(layers)), progress); err != nil {
			return err
		}
	}
	if cfg.WorkingDir != "" {
		// As container engines do: the working directory exists.
		rel, err := tarfs.CleanRel(cfg.WorkingDir)
		if err != nil {
			return fmt.Errorf("image working directory: %w", err)
		}
		fd, err := up.root.OpenDir(rel, func(string) {})
		if err != nil {
			return fmt.Errorf("creating the image's working directory %s: %w", cfg.WorkingDir, err)
		}
		unix.Close(fd)
	}
	if n := up.skipped(); n > 0 {
		progress(fmt.Sprintf("skipped %d device nodes or special entries", n))
	}
	return nil
}

// unpackLayer unpacks one layer and checks its digest.
func unpackLayer(ctx context.Context, up *unpacker, l v1.Layer, diffID v1.Hash, what string, progress func(string)) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rc.Close()
	progress(what)
	h := sha256.New()
	cr := &countingReader{ctx: ctx, r: rc, progress: func(n int64) { progress(fmt.Sprintf("%s: %d MB", what, n>>20)) }}
	tee := io.TeeReader(cr, h)
	if err := up.layer(tee); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// Hash the whole stream, padding after the tar's end included.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); diffID.Algorithm != "sha256" || got != diffID.Hex {
		return fmt.Errorf("%s is corrupt: its content hashes to sha256:%s, the image config says %s", what, got, diffID)
	}
	return nil
}

// countingReader reads r until ctx ends, reporting every 4 MiB read.
type countingReader struct {
	ctx      context.Context
	r        io.Reader
	n, last  int64
	progress func(n int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n-c.last >= 4<<20 {
		c.last = c.n
		c.progress(c.n)
	}
	return n, err
}

// listOrNone joins names, or says "none".
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
