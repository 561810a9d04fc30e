package tarfs

// Packing a directory into a tar stream. The walk goes from directory
// descriptor to directory descriptor with *at calls that never follow a
// last component, so a symlink is stored as a symlink and nothing outside
// the directory is read, whatever changes under the walk meanwhile.

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// PackOptions say what Pack leaves out.
type PackOptions struct {
	// SkipDir, when set, is asked about every directory below the root
	// (rel is its path relative to the root): true stores the directory
	// without entering it.
	SkipDir func(rel string) bool
}

// Pack writes directory dir (followed when it is a symlink) to w as a tar
// stream: every entry below it, named relative to it, in lexical order
// within each directory. Directories, regular files, symlinks (as links,
// never followed), fifos and further names of a file seen before (hard
// links) are stored with their mode, numeric owner and modification time
// (seconds); sockets and device nodes are left out and counted as skipped.
// A file is sent at the size it had when it was opened; one that shrinks
// meanwhile fails the pack, since its entry cannot be completed.
func Pack(w io.Writer, dir string, opts PackOptions) (Stats, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stats{}, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	p := &packer{tw: tar.NewWriter(w), opts: opts, links: map[fileID]string{}}
	err = p.dir(fd, "")
	unix.Close(fd)
	if err != nil {
		return p.stats, err
	}
	return p.stats, p.tw.Close()
}

// packer is one Pack.
type packer struct {
	tw    *tar.Writer
	opts  PackOptions
	stats Stats
	// links maps a file with several names to the first name stored.
	links map[fileID]string
}

// fileID identifies a file across its names.
type fileID struct{ dev, ino uint64 }

// dir stores the entries of the directory open as fd, whose path is rel.
func (p *packer) dir(fd int, rel string) error {
	names, err := ReadDirNames(fd)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: "/" + rel, Err: err}
	}
	slices.Sort(names)
	for _, name := range names {
		if err := p.entry(fd, JoinRel(rel, name), name); err != nil {
			return err
		}
	}
	return nil
}

// entry stores name of directory dfd, whose path is rel.
func (p *packer) entry(dfd int, rel, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil // removed since the listing
		}
		return &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	hdr := header(rel, &st)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
		if err := p.write(hdr); err != nil {
			return err
		}
		if p.opts.SkipDir != nil && p.opts.SkipDir(rel) {
			return nil
		}
		sub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		defer unix.Close(sub)
		return p.dir(sub, rel)
	case unix.S_IFLNK:
		target, err := readlinkAt(dfd, name)
		if err != nil {
			return &os.PathError{Op: "readlink", Path: rel, Err: err}
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
	case unix.S_IFREG:
		return p.file(dfd, rel, name)
	default:
		p.stats.Skipped++
		return nil
	}
	return p.write(hdr)
}

// file stores regular file name of directory dfd, or a hard link to the
// name it was first stored under.
func (p *packer) file(dfd int, rel, name string) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s was replaced by something else while being packed", rel)
	}
	hdr := header(rel, &st)
	if st.Nlink > 1 {
		id := fileID{dev: uint64(st.Dev), ino: st.Ino}
		if first, ok := p.links[id]; ok {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return p.write(hdr)
		}
		p.links[id] = rel
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
	if err := p.write(hdr); err != nil {
		return err
	}
	n, err := io.CopyN(p.tw, f, st.Size)
	p.stats.Bytes += n
	if err == io.EOF {
		return fmt.Errorf("%s shrank from %d to %d bytes while being packed", rel, st.Size, n)
	}
	return err
}

// write writes an entry's header and counts it.
func (p *packer) write(hdr *tar.Header) error {
	if err := p.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("packing %s: %w", hdr.Name, err)
	}
	p.stats.Entries++
	return nil
}

// header is the common part of the header of rel, described by st.
func header(rel string, st *unix.Stat_t) *tar.Header {
	return &tar.Header{
		Name:    rel,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Sec, 0),
	}
}

// readlinkAt reads the target of symlink name in directory dfd.
func readlinkAt(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
