// Package layertree unpacks a captured writable layer (a tar file of
// gVisor's overlay upper layer, runsc tar rootfs-upper) into a directory
// that Linux overlayfs takes as a lower layer above an image: the tree of
// a template that every sandbox of it shares read-only (issue 39).
//
// The layer's format is overlayfs's own: a removed file is a character
// device 0/0 (a whiteout), a directory that hides the one below has the
// xattr trusted.overlay.opaque=y (a PAX record SCHILY.xattr.… in the
// tar). Unpack keeps both; other device nodes, sockets and xattrs are
// left out (a host must never get a device node from a sandbox). The
// stream is a sandbox's and hostile: it is extracted by tarfs, every path
// resolved inside the tree.
package layertree

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/tarfs"
)

// opaqueXattr marks a directory that hides the lower layers' one.
const opaqueXattr = "trusted.overlay.opaque"

// paxOpaque is the PAX record of opaqueXattr in gVisor's tar.
const paxOpaque = "SCHILY.xattr." + opaqueXattr

// CheckpointNote names, in a checkpoint directory, the file that holds the
// tree its sandbox booted on: a restore needs the same one.
const CheckpointNote = "hutch-layer-tree"

// Unpack writes the layer tar file layer into a new directory dir (its
// parent must exist), atomically: it unpacks beside dir and renames. The
// tree's root is root's, mode 0755, as an image's. An existing dir is
// kept as it is.
func Unpack(layer, dir string) (err error) {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	f, err := os.Open(layer)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := extract(f, tmp); err != nil {
		return fmt.Errorf("unpacking layer %s: %w", filepath.Base(layer), err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			os.RemoveAll(tmp) // another Unpack made it first
			return nil
		}
		return err
	}
	return nil
}

// extract applies the layer stream r to the directory dir.
func extract(r io.Reader, dir string) error {
	root, err := tarfs.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var opaque []string
	special := func(hdr *tar.Header, rel string) (bool, error) {
		switch {
		case hdr.Typeflag == tar.TypeChar && hdr.Devmajor == 0 && hdr.Devminor == 0:
			return true, whiteout(root, rel, hdr)
		case hdr.Typeflag == tar.TypeDir && hdr.PAXRecords[paxOpaque] == "y":
			// An opaque directory hides what came before it too (a
			// sandbox's layer written after its template's tree).
			opaque = append(opaque, rel)
			return false, clearDir(root, rel)
		case hdr.Typeflag == tar.TypeDir && isWhiteout(root, rel):
			// A directory made where a whiteout hid the image's.
			opaque = append(opaque, rel)
		}
		return false, nil
	}
	x := tarfs.NewExtractor(root, tarfs.Options{Chown: os.Geteuid() == 0, ReplaceDirs: true, Special: special})
	if err := x.Extract(r, nil); err != nil {
		return err
	}
	for _, rel := range opaque {
		if err := setOpaque(root, rel); err != nil {
			return err
		}
	}
	return nil
}

// clearDir empties directory rel, when there is one.
func clearDir(root *tarfs.Root, rel string) error {
	fd, err := root.Resolve(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil // none (or not a directory: the entry replaces it)
	}
	defer unix.Close(fd)
	names, err := tarfs.ReadDirNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := tarfs.RemoveAllAt(fd, n); err != nil {
			return err
		}
	}
	return nil
}

// isWhiteout says rel is a whiteout.
func isWhiteout(root *tarfs.Root, rel string) bool {
	dir, base := tarfs.SplitRel(rel)
	dfd, err := root.Resolve(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	st, ok, err := tarfs.LstatAt(dfd, base)
	return err == nil && ok && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// whiteout makes the whiteout rel: a character device 0/0.
func whiteout(root *tarfs.Root, rel string, hdr *tar.Header) error {
	dir, base := tarfs.SplitRel(rel)
	dfd, err := root.OpenDir(dir, func(string) {})
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := tarfs.RemoveAllAt(dfd, base); err != nil {
		return err
	}
	if err := unix.Mknodat(dfd, base, unix.S_IFCHR, 0); err != nil {
		return &os.PathError{Op: "whiteout", Path: rel, Err: err}
	}
	if os.Geteuid() == 0 {
		return unix.Fchownat(dfd, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// setOpaque marks directory rel opaque, when it still is a directory.
func setOpaque(root *tarfs.Root, rel string) error {
	fd, err := root.Resolve(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsetxattr(fd, opaqueXattr, []byte("y"), 0); err != nil {
		return &os.PathError{Op: "setxattr", Path: rel, Err: err}
	}
	return nil
}

// Write writes the tree at dir to tw as a layer, in the format Unpack
// reads (whiteouts and opaque directories kept; hard links within the
// tree as links), without the archive's end: a sandbox's own writable
// layer appended after it applies on top (Unpack applies entries in order).
func Write(tw *tar.Writer, dir string) error {
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		hdr := &tar.Header{Name: rel, Mode: int64(st.Mode & 0o7777), Uid: int(st.Uid), Gid: int(st.Gid),
			ModTime: time.Unix(st.Mtim.Unix()), Format: tar.FormatPAX}
		key := [2]uint64{st.Dev, st.Ino}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
			if v := make([]byte, 1); isOpaque(p, v) {
				hdr.PAXRecords = map[string]string{paxOpaque: "y"}
			}
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case unix.S_IFCHR:
			if st.Rdev != 0 {
				return nil // only whiteouts are made by Unpack
			}
			hdr.Typeflag = tar.TypeChar
		case unix.S_IFIFO:
			hdr.Typeflag = tar.TypeFifo
		case unix.S_IFREG:
			if first, ok := links[key]; ok && st.Nlink > 1 {
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
				return tw.WriteHeader(hdr)
			}
			links[key] = rel
			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.CopyN(tw, f, st.Size)
			return err
		default:
			return nil
		}
		return tw.WriteHeader(hdr)
	})
	if err != nil {
		return err
	}
	return tw.Flush()
}

// isOpaque says directory p is marked opaque.
func isOpaque(p string, buf []byte) bool {
	n, err := unix.Lgetxattr(p, opaqueXattr, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}
