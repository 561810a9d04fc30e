package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// OCI whiteout names (image-spec layer.md): ".wh.NAME" deletes NAME of the
// layers below; ".wh..wh..opq" in a directory hides everything the layers
// below put in it.
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// unpacker applies image layers, in order, to a root filesystem. It owns
// its root for the whole unpack; nothing else writes there meanwhile.
type unpacker struct {
	root *rootDir
	// chown applies the entries' owners; only root can.
	chown bool
	log   *slog.Logger

	// touched holds every path the current layer wrote or implied (the
	// parents of what it wrote); whiteouts and opaque directories spare them.
	touched map[string]bool
	// dirTimes are the directories of the current layer whose times are
	// set once the layer's entries are in (each entry changes its parent's).
	dirTimes []dirTime
	// skipped counts entries left out (device nodes, unknown types).
	skipped int
	// left is how many more bytes the image may unpack to (see charge).
	left, max int64
}

// entryCost is what each entry is charged beyond its content (a tar
// header's size), so that millions of empty files count too.
const entryCost = 512

type dirTime struct {
	rel          string
	atime, mtime time.Time
}

// newUnpacker unpacks into the existing, empty directory rootfs, at most
// maxBytes of file content and entries (see charge) over all layers.
func newUnpacker(rootfs string, maxBytes int64, log *slog.Logger) (*unpacker, error) {
	r, err := openRootDir(rootfs)
	if err != nil {
		return nil, err
	}
	return &unpacker{root: r, chown: os.Geteuid() == 0, log: log, left: maxBytes, max: maxBytes}, nil
}

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
	u.dirTimes = u.dirTimes[:0]
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading layer: %w", err)
		}
		if err := u.charge(hdr); err != nil {
			return err
		}
		if err := u.entry(hdr, tr); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	// Deepest first, so setting a child's times cannot disturb its parent's.
	for _, dt := range slices.Backward(u.dirTimes) {
		dir, base := splitRel(dt.rel)
		if err := u.inDir(dir, func(dfd int) error { return setTimes(dfd, base, dt.atime, dt.mtime) }); err != nil {
			return fmt.Errorf("setting times of %q: %w", dt.rel, err)
		}
	}
	return nil
}

// inDir runs fn with a descriptor of directory rel, created if missing.
func (u *unpacker) inDir(rel string, fn func(dirfd int) error) error {
	fd, err := u.root.openDir(rel, u.touch)
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
		rel, _ = splitRel(rel)
	}
}

// entry applies one tar entry.
func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	rel, err := cleanRel(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		return nil // the root itself: its metadata is the cache's
	}
	dir, base := splitRel(rel)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return u.whiteout(dir, base)
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeGNUSparse, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeFifo:
	default:
		// Device nodes would be inert (the sandbox has its own /dev), and
		// the rest are not files.
		u.skipped++
		u.log.Debug("skipping layer entry", "name", hdr.Name, "type", string(hdr.Typeflag))
		return nil
	}
	return u.inDir(dir, func(dfd int) error {
		u.touch(rel)
		if hdr.Typeflag == tar.TypeDir {
			return u.dir(dfd, rel, base, hdr)
		}
		if err := removeAllAt(dfd, base); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			if err := unix.Symlinkat(hdr.Linkname, dfd, base); err != nil {
				return &os.PathError{Op: "symlink", Path: rel, Err: err}
			}
			return u.setMeta(dfd, base, hdr, true)
		case tar.TypeLink:
			return u.hardlink(dfd, base, hdr.Linkname)
		case tar.TypeFifo:
			if err := unix.Mknodat(dfd, base, unix.S_IFIFO|0o600, 0); err != nil {
				return &os.PathError{Op: "mkfifo", Path: rel, Err: err}
			}
			return u.setMeta(dfd, base, hdr, false)
		}
		return u.file(dfd, rel, base, hdr, r)
	})
}

// dir creates directory base, or keeps one that is there (merging the
// layers' contents) and gives it this entry's metadata.
func (u *unpacker) dir(dfd int, rel, base string, hdr *tar.Header) error {
	st, ok, err := lstatAt(dfd, base)
	if err != nil {
		return err
	}
	if ok && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := removeAllAt(dfd, base); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		if err := unix.Mkdirat(dfd, base, 0o700); err != nil {
			return &os.PathError{Op: "mkdir", Path: rel, Err: err}
		}
	}
	if err := u.setOwnerMode(dfd, base, hdr, false); err != nil {
		return err
	}
	u.dirTimes = append(u.dirTimes, dirTime{rel: rel, atime: accessTime(hdr), mtime: hdr.ModTime})
	return nil
}

// file writes a regular file's content. O_EXCL|O_NOFOLLOW: whatever was
// at base has just been removed, and nothing is written through a link.
func (u *unpacker) file(dfd int, rel, base string, hdr *tar.Header, r io.Reader) error {
	fd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	return u.setMeta(dfd, base, hdr, false)
}

// hardlink links base to the existing file target (a path from the root).
// The target's directory is resolved inside the root; the target itself
// is not followed, as tar means.
func (u *unpacker) hardlink(dfd int, base, target string) error {
	trel, err := cleanRel(target)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if trel == "" {
		return errors.New("hard link to the root directory")
	}
	tdir, tbase := splitRel(trel)
	tfd, err := u.root.openDir(tdir, nil)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", target, err)
	}
	defer unix.Close(tfd)
	st, ok, err := lstatAt(tfd, tbase)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("hard link target %q does not exist", target)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return fmt.Errorf("hard link target %q is a directory", target)
	}
	if err := unix.Linkat(tfd, tbase, dfd, base, 0); err != nil {
		return &os.PathError{Op: "link", Path: target, Err: err}
	}
	return nil
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
	rel := path2(dir, victim)
	if u.touched[rel] {
		return nil // a whiteout hides the layers below, not its own
	}
	fd, err := u.root.openDir(dir, nil)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // nothing below to hide
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return removeAllAt(fd, victim)
}

// prune removes from directory dir (open as dfd) everything the current
// layer did not write, descending into the directories it did.
func (u *unpacker) prune(dfd int, dir string) error {
	rfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(rfd)
	names, err := readDirNames(rfd)
	if err != nil {
		return err
	}
	for _, n := range names {
		rel := path2(dir, n)
		if !u.touched[rel] {
			if err := removeAllAt(rfd, n); err != nil {
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

// setMeta gives base the entry's owner, mode and times.
func (u *unpacker) setMeta(dfd int, base string, hdr *tar.Header, symlink bool) error {
	if err := u.setOwnerMode(dfd, base, hdr, symlink); err != nil {
		return err
	}
	return setTimes(dfd, base, accessTime(hdr), hdr.ModTime)
}

// setOwnerMode chowns (as root) then chmods: chown clears set-id bits.
// Symlinks have no mode of their own.
func (u *unpacker) setOwnerMode(dfd int, base string, hdr *tar.Header, symlink bool) error {
	if u.chown {
		if err := unix.Fchownat(dfd, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "chown", Path: base, Err: err}
		}
	}
	if symlink {
		return nil
	}
	// base was created by this unpack and is not a symlink, so following
	// it (fchmodat cannot do otherwise) reaches nothing else.
	if err := unix.Fchmodat(dfd, base, uint32(hdr.Mode&0o7777), 0); err != nil {
		return &os.PathError{Op: "chmod", Path: base, Err: err}
	}
	return nil
}

// setTimes sets base's access and modification times, not following it.
func setTimes(dfd int, base string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(dfd, base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: base, Err: err}
	}
	return nil
}

// accessTime is the entry's atime, or its mtime when the tar has none.
func accessTime(hdr *tar.Header) time.Time {
	if hdr.AccessTime.IsZero() {
		return hdr.ModTime
	}
	return hdr.AccessTime
}

// path2 joins a clean relative directory and a name.
func path2(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
