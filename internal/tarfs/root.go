// Package tarfs moves directory trees in and out of tar streams, with the
// tar stream and the tree both untrusted: Extract writes a stream into a
// directory and never anywhere else (image layers, archives uploaded into
// a sandbox, archives a sandbox sends to the CLI), Pack writes a directory
// as a stream without following its symlinks.
//
// It depends on nothing but the standard library and x/sys, so that the
// agent inside every sandbox can link it.
package tarfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is a directory opened as the root of an untrusted tree (an image
// being unpacked, a published rootfs read by the host, the directory an
// archive is unpacked into). Every path is resolved inside it by the
// kernel (openat2 RESOLVE_IN_ROOT): symlinks are followed as if the
// directory were "/", ".." never climbs out of it, and callers never
// follow a final component. Nothing a tree plants can make the caller
// read or write outside it.
type Root struct {
	fd   int // O_PATH descriptor of the directory
	path string
}

// OpenRoot opens dir as a Root.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{fd: fd, path: dir}, nil
}

// Close releases the directory.
func (r *Root) Close() error { return unix.Close(r.fd) }

// ErrUnsafe marks an entry refused because of what it names: a path that
// climbs out of its root, a hard link to something that is not a file of
// the tree, a malformed stream. Errors.Is(err, ErrUnsafe) tells these from
// the system's errors.
var ErrUnsafe = errors.New("unsafe or malformed entry")

// unsafeError is an error of the input, matching ErrUnsafe.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

// unsafef formats an unsafeError.
func unsafef(format string, args ...any) error {
	return &unsafeError{msg: fmt.Sprintf(format, args...)}
}

// CleanRel turns a path from an untrusted tree (a tar entry name, a hard
// link target, a config field) into a clean path relative to the root:
// leading slashes and "." components go, and a ".." component is an error
// (ErrUnsafe) rather than something to resolve. "" is the root itself.
func CleanRel(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", unsafef("path %q contains a NUL byte", name)
	}
	parts := strings.Split(name, "/")
	out := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
		case "..":
			return "", unsafef("path %q climbs out of its root with a .. component", name)
		default:
			out = append(out, p)
		}
	}
	return strings.Join(out, "/"), nil
}

// SplitRel splits a clean relative path into its directory ("" for the
// root) and last component.
func SplitRel(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// JoinRel joins a clean relative directory ("" for the root) and a name.
func JoinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Resolve opens rel (clean, relative) inside the root with flags, retrying
// the kernel's EAGAIN (a concurrent rename elsewhere in the tree). Paths
// that cross into another mount fail (EXDEV).
func (r *Root) Resolve(rel string, flags uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	}
	for range 16 {
		fd, err := unix.Openat2(r.fd, rel, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: "/" + rel, Err: err}
			}
			return fd, nil
		}
	}
	return -1, &os.PathError{Op: "open", Path: "/" + rel, Err: unix.EAGAIN}
}

// OpenDir returns an O_PATH descriptor of directory rel. When mkdir is not
// nil, missing directories are created (0755, owned by the caller) and
// mkdir is told each one's path.
func (r *Root) OpenDir(rel string, mkdir func(rel string)) (int, error) {
	fd, err := r.Resolve(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || mkdir == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	// Create the missing ones, each under its parent resolved from the root.
	parent, base := SplitRel(rel)
	pfd, err := r.OpenDir(parent, mkdir)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, 0o755); err != nil && err != unix.EEXIST {
		return -1, &os.PathError{Op: "mkdir", Path: "/" + rel, Err: err}
	}
	mkdir(rel)
	return r.Resolve(rel, unix.O_PATH|unix.O_DIRECTORY)
}

// ReadFile reads regular file rel, at most max bytes (more is an error).
// A symlink is followed, inside the root.
func (r *Root) ReadFile(rel string, max int64) ([]byte, error) {
	fd, err := r.Resolve(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "/"+rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("/%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("/%s is larger than %d bytes", rel, max)
	}
	return b, nil
}

// LstatAt describes name in directory dirfd without following it; ok is
// false when it does not exist.
func LstatAt(dirfd int, name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return st, false, nil
	}
	return st, err == nil, err
}

// RemoveAllAt removes name from directory dirfd and, when it is a
// directory, everything under it. Nothing is followed: a symlink is
// removed, never its target. A missing name is not an error.
func RemoveAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR, unix.EPERM:
	default:
		return &os.PathError{Op: "unlink", Path: name, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	names, err := ReadDirNames(fd)
	if err == nil {
		for _, n := range names {
			if err = RemoveAllAt(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

// ReadDirNames lists the entries of the directory open as fd (readable,
// not O_PATH). The descriptor stays open and owned by the caller.
func ReadDirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	return d.Readdirnames(-1)
}
