package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// OCI whiteout names (image-spec layer.md): ".wh.NAME" deletes NAME of the
// layers below; ".wh..wh..opq" in a directory hides everything the layers
// below put in it.
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// unpacker applies image layers, in order, to a root filesystem, through
// the shared in-root extraction (tarfs) with the OCI whiteouts on top. It
// owns its root for the whole unpack; nothing else writes there meanwhile.
type unpacker struct {
	root *tarfs.Root
	x    *tarfs.Extractor
	log  *slog.Logger

	// touched holds every path the current layer wrote or implied (the
	// parents of what it wrote); whiteouts and opaque directories spare them.
	touched map[string]bool
	// left is how many more bytes the image may unpack to (see charge).
	left, max int64
}

// entryCost is what each entry is charged beyond its content (a tar
// header's size), so that millions of empty files count too.
const entryCost = 512

// newUnpacker unpacks into the existing, empty directory rootfs, at most
// maxBytes of file content and entries (see charge) over all layers.
// Entries keep their owners when the daemon runs as root; a layer's
// entries replace whatever the layers below put in their way.
func newUnpacker(rootfs string, maxBytes int64, log *slog.Logger) (*unpacker, error) {
	r, err := tarfs.OpenRoot(rootfs)
	if err != nil {
		return nil, err
	}
	u := &unpacker{root: r, log: log, left: maxBytes, max: maxBytes}
	u.x = tarfs.NewExtractor(r, tarfs.Options{
		Chown:       os.Geteuid() == 0,
		ReplaceDirs: true,
		Special:     u.special,
		Wrote:       u.touch,
		Skipped: func(hdr *tar.Header) {
			// Device nodes would be inert (the sandbox has its own /dev),
			// and the rest are not files.
			log.Debug("skipping layer entry", "name", hdr.Name, "type", string(hdr.Typeflag))
		},
	})
	return u, nil
}

// skipped counts the entries left out (device nodes, unknown types).
func (u *unpacker) skipped() int64 { return u.x.Stats().Skipped }

// charge takes an entry's cost from what the image may still unpack to;
// past the bound the unpack fails (S102) before anything is written.
func (u *unpacker) charge(hdr *tar.Header) error {
	cost := int64(entryCost)
	if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeGNUSparse {
		cost += max(hdr.Size, 0)
	}
	if cost > u.left {
		return errdefs.New(errdefs.CodeImagePull, "the image unpacks to more than %d MiB (max_image_unpacked_mb): a decompression bomb, or an image bigger than this daemon allows", u.max>>20).
			WithFix(nil, "use a smaller image, or raise max_image_unpacked_mb in the daemon's config if you trust this one")
	}
	u.left -= cost
	return nil
}

// Close releases the root.
func (u *unpacker) Close() error { return u.root.Close() }

// layer applies one uncompressed layer tar stream. It stops at the first
// entry it cannot apply safely: an image that tries to write outside its
// root is refused as a whole.
func (u *unpacker) layer(r io.Reader) error {
	u.touched = map[string]bool{}
	return u.x.Extract(r, u.charge)
}

// inDir runs fn with a descriptor of directory rel, created if missing.
func (u *unpacker) inDir(rel string, fn func(dirfd int) error) error {
	fd, err := u.root.OpenDir(rel, u.touch)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fn(fd)
}

// touch records that the current layer wrote rel, and so its parents.
func (u *unpacker) touch(rel string) {
	for rel != "" && !u.touched[rel] {
		u.touched[rel] = true
		rel, _ = tarfs.SplitRel(rel)
	}
}

// special takes the whiteout entries, which are not files to make.
func (u *unpacker) special(_ *tar.Header, rel string) (bool, error) {
	dir, base := tarfs.SplitRel(rel)
	if !strings.HasPrefix(base, whiteoutPrefix) {
		return false, nil
	}
	return true, u.whiteout(dir, base)
}

// whiteout applies a whiteout entry found in directory dir.
func (u *unpacker) whiteout(dir, base string) error {
	if base == whiteoutOpaque {
		return u.inDir(dir, func(dfd int) error {
			u.touch(dir)
			return u.prune(dfd, dir)
		})
	}
	if strings.HasPrefix(base, whiteoutMeta) {
		return nil // other AUFS metadata (.wh..wh.plnk, ...): not files
	}
	victim := strings.TrimPrefix(base, whiteoutPrefix)
	if victim == "" || victim == "." || victim == ".." {
		return fmt.Errorf("invalid whiteout %q", base)
	}
	rel := tarfs.JoinRel(dir, victim)
	if u.touched[rel] {
		return nil // a whiteout hides the layers below, not its own
	}
	fd, err := u.root.OpenDir(dir, nil)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // nothing below to hide
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return tarfs.RemoveAllAt(fd, victim)
}

// prune removes from directory dir (open as dfd) everything the current
// layer did not write, descending into the directories it did.
func (u *unpacker) prune(dfd int, dir string) error {
	rfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(rfd)
	names, err := tarfs.ReadDirNames(rfd)
	if err != nil {
		return err
	}
	for _, n := range names {
		rel := tarfs.JoinRel(dir, n)
		if !u.touched[rel] {
			if err := tarfs.RemoveAllAt(rfd, n); err != nil {
				return err
			}
			continue
		}
		sub, err := unix.Openat(rfd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOTDIR || err == unix.ELOOP {
			continue // a file of this layer
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		err = u.prune(sub, rel)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}
