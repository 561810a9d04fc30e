package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Bind mounts (runtime.Spec.Mounts). runsc's gofer mounts each host
// directory inside the bundle's rootfs, on the host, before it seals the
// root, and it cannot create a mount point in the read-only image. When
// every destination is a directory of the image, rootfs is the image as
// always. Otherwise rootfs is an overlay of the image whose upper layer
// (<bundle>/binds) holds only the missing directories, created through the
// overlay, and it is bound read-only at rootfs like the image: the
// sandbox's writes still go to runsc's own overlay. Teardown unmounts it
// with the rest of the bundle. Destinations are resolved inside the image
// (its symlinks followed as the sandbox would follow them) and must not
// land on a reserved path.
//
// runsc serves bind mounts with --file-access-mounts=shared (its default):
// the Sentry revalidates what it caches against the host, so sandboxes
// mounting one directory see each other's writes.

// bindsDir is the bundle's directory of the mount points' overlay.
const bindsDir = "binds"

// withMounts adds mounts to the OCI spec as bind mounts, after the
// runtime's own.
func withMounts(s *specs.Spec, mounts []runtime.Mount) {
	for _, m := range mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		s.Mounts = append(s.Mounts, specs.Mount{
			Destination: m.Destination,
			Type:        "bind",
			Source:      m.Source,
			Options:     []string{"bind", mode, "nosuid", "nodev"},
		})
	}
}

// mountRootfs binds the image's root filesystem read-only at mnt, in
// bundle dir, with a mount point for each of mounts.
func mountRootfs(image, dir, mnt string, mounts []runtime.Mount) error {
	var missing []string
	for _, m := range mounts {
		ok, err := hasDir(image, m.Destination)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, m.Destination)
		}
	}
	if len(missing) == 0 {
		return bindReadOnly(image, mnt)
	}
	merged, err := overlayImage(image, filepath.Join(dir, bindsDir))
	if err != nil {
		return err
	}
	for _, p := range missing {
		if err := mkdirInRoot(merged, p); err != nil {
			return err
		}
		ok, err := hasDir(merged, p)
		if err != nil {
			return err
		}
		if !ok {
			return errdefs.New(errdefs.CodeVolumeMount, "cannot mount at %s: the image has a broken symbolic link there", p)
		}
	}
	return bindReadOnly(merged, mnt)
}

// overlayImage mounts an overlay of image with an empty upper layer under
// dir and returns where. The upper layer's root takes the image root's
// owner and mode, which the overlay's root shows.
func overlayImage(image, dir string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(image, &st); err != nil {
		return "", err
	}
	upper, work, merged := filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{dir, upper, work, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("creating the mount points' overlay: %w", err)
		}
	}
	if err := errors.Join(os.Chown(upper, int(st.Uid), int(st.Gid)), os.Chmod(upper, os.FileMode(st.Mode&0o7777))); err != nil {
		return "", err
	}
	for _, p := range []string{image, upper, work} {
		if strings.ContainsAny(p, ",:\\") {
			return "", fmt.Errorf("cannot overlay %s: its path has a comma, colon or backslash", p)
		}
	}
	opts := "lowerdir=" + image + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mounting an overlay of the image for mount points: %w", err)
	}
	return merged, nil
}

// openInRoot opens path p (absolute) of the tree at root, resolving it
// inside the tree as the sandbox would (symlinks followed, ".." never
// above root), as an O_PATH directory descriptor.
func openInRoot(root, p string) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	for {
		fd, err := unix.Openat2(rfd, rel, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
}

// hasDir reports whether p is a directory of the tree at root; S264 when
// it is something else, or resolves to a reserved path.
func hasDir(root, p string) (bool, error) {
	fd, err := openInRoot(root, p)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return false, errdefs.New(errdefs.CodeVolumeMount, "cannot mount at %s: the image has something other than a directory there", p)
	}
	if err != nil {
		return false, fmt.Errorf("looking up mount point %s: %w", p, err)
	}
	defer unix.Close(fd)
	host, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return false, err
	}
	rootHost, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, err
	}
	inside := "/" + strings.TrimPrefix(strings.TrimPrefix(host, rootHost), "/")
	if host != rootHost && !strings.HasPrefix(host, rootHost+"/") || runtime.ReservedPath(inside) {
		return false, errdefs.New(errdefs.CodeVolumeMount, "cannot mount at %s: in the image it is %s, which the sandbox's system uses", p, inside)
	}
	return true, nil
}

// mkdirInRoot creates directory p (absolute) and its missing parents in
// the tree at root, each resolved inside the tree.
func mkdirInRoot(root, p string) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := range parts {
		sub := "/" + strings.Join(parts[:i+1], "/")
		fd, err := openInRoot(root, sub)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("creating mount point %s: %s: %w", p, sub, err)
		}
		pfd, err := openInRoot(root, "/"+strings.Join(parts[:i], "/"))
		if err != nil {
			return fmt.Errorf("creating mount point %s: %w", p, err)
		}
		err = unix.Mkdirat(pfd, parts[i], 0o755)
		unix.Close(pfd)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating mount point %s: %s: %w", p, sub, err)
		}
	}
	return nil
}
