// Package image is hutch's image store: it turns a catalog name into an
// immutable root filesystem on the host, building or fetching it once and
// caching it by content hash.
//
// The presets ("python", "node") are built from Debian packages with
// mmdebstrap and keyed by a hash of their recipe, so they need no container
// registry and are rebuilt only when the recipe changes. Custom OCI images
// share the same cache, keyed by their manifest digest.
//
// Cache layout under Options.CacheDir:
//
//	images/<id>/rootfs/     the root filesystem; never written once published
//	images/<id>/image.json  the Image (without Rootfs)
//	tmp/<id>/               a build in progress, or a crash's leftover
//	locks/<id>.lock         flock held while <id> is built, across processes
//	refs/<hash>.json        what a custom image's reference last resolved to
//
// A build fills tmp/<id>/ and renames it to images/<id>/ only when complete,
// so a directory under images/ is always a whole image.
package image

import (
	"log/slog"
	"slices"
	"time"
)

// Kinds of image.
const (
	KindPreset = "preset" // built from Debian packages by a recipe
	KindCustom = "custom" // pulled from an OCI reference
)

// States reported by Store.Status.
const (
	StateMissing  = "missing"
	StateBuilding = "building" // a preset's recipe
	StatePulling  = "pulling"  // a custom image's OCI reference
	StateReady    = "ready"
)

// Config is the part of an image's configuration that sandboxes honour.
type Config struct {
	// Env holds KEY=value pairs set for every process of the sandbox.
	Env []string `json:"env"`
	// WorkingDir is the default working directory.
	WorkingDir string `json:"working_dir"`
	// User is the default user; empty means root.
	User string `json:"user"`
}

// Image is a cached image, ready to run.
type Image struct {
	// Name is the catalog name, e.g. "python".
	Name string `json:"name"`
	// Kind is KindPreset or KindCustom.
	Kind string `json:"kind"`
	// Ref is the catalog's source text: for presets the recipe in short,
	// e.g. "debian:bookworm+ca-certificates+python3"; for custom images the OCI reference.
	Ref string `json:"ref"`
	// ID is the content hash in hex: of the recipe for presets, the
	// manifest digest for custom images.
	ID string `json:"id"`
	// Rootfs is the absolute path of the root filesystem. It is shared by
	// every sandbox of the image and must never be written to.
	Rootfs string `json:"-"`
	// Config is the image configuration sandboxes honour.
	Config Config `json:"config"`
	// SizeBytes is the apparent size of the root filesystem's files.
	SizeBytes int64 `json:"size_bytes"`
	// BuiltAt is when the image was built or pulled.
	BuiltAt time.Time `json:"built_at"`
}

// clone returns a copy of img that shares no memory with it.
func (img *Image) clone() *Image {
	c := *img
	c.Config.Env = slices.Clone(img.Config.Env)
	return &c
}

// Options configure a Store.
type Options struct {
	// CacheDir holds the cached images. Required.
	CacheDir string
	// Logger receives build and cache events; default slog.Default().
	Logger *slog.Logger
	// Suite is the Debian suite presets are built from; default the host's
	// VERSION_CODENAME from /etc/os-release, else "bookworm".
	Suite string
	// Mirror is the Debian mirror presets are built from; default the
	// host's apt source for Suite, else http://deb.debian.org/debian.
	// It is not part of an image's identity.
	Mirror string
	// CustomImages maps catalog names to OCI references (config key
	// custom_images): "host/repo:tag", "host/repo@sha256:...",
	// "oci-layout:/dir[:tag]" or "docker-archive:/file.tar".
	CustomImages map[string]string
	// MaxUnpackedBytes bounds what one pulled image may unpack to (config
	// key max_image_unpacked_mb), against decompression bombs; default
	// DefaultMaxUnpackedBytes.
	MaxUnpackedBytes int64
}

// DefaultMaxUnpackedBytes is Options.MaxUnpackedBytes when unset: 8 GiB.
const DefaultMaxUnpackedBytes = 8 << 30

// withDefaults returns o with every unset field given its default.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Suite == "" {
		o.Suite = hostSuite(hostOSRelease)
	}
	if o.Mirror == "" {
		o.Mirror = hostMirror(hostAptDir, o.Suite)
	}
	if o.MaxUnpackedBytes <= 0 {
		o.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	return o
}
