package tarfs

// Extraction of an untrusted tar stream into a Root. Every entry's path is
// cleaned (CleanRel: ".." is refused, absolute names are relative to the
// root), its directory is resolved inside the root (a symlink on the way
// is followed as if the root were "/"), and the entry itself is made with
// *at calls on that directory that never follow a last component: a
// symlink the stream planted is replaced, never written through.

import (
	"archive/tar"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Options say how an Extractor treats entries.
type Options struct {
	// Chown gives entries the owners their headers name (only root can);
	// otherwise what is made belongs to the caller.
	Chown bool
	// DropSetID clears the setuid and setgid bits of every entry.
	DropSetID bool
	// ReplaceDirs lets an entry replace a directory in its way together
	// with everything in it (image layers). Without it only an empty
	// directory is replaced, and a non-empty one fails the entry
	// (ENOTEMPTY).
	ReplaceDirs bool
	// Special, when set, is asked first about every entry below the root
	// (rel is its clean path): handled true means it dealt with the entry
	// (an image's whiteouts).
	Special func(hdr *tar.Header, rel string) (handled bool, err error)
	// Wrote, when set, is told the path of every entry written and of
	// every directory created on the way to one.
	Wrote func(rel string)
	// Skipped, when set, is told every entry left out: device nodes (a
	// sandbox has its own /dev, and a host must never get one from a
	// stream) and types that are not files.
	Skipped func(hdr *tar.Header)
}

// Stats count what an Extractor did.
type Stats struct {
	// Entries is how many files, directories, links and fifos were made.
	Entries int64
	// Bytes is how much file content was written.
	Bytes int64
	// Skipped is how many entries were left out (Options.Skipped).
	Skipped int64
}

// Extractor applies tar entries to a Root. Directories get their mode,
// owner and times in Finish, deepest first, so that a read-only directory
// of the stream does not shut out its own entries when the caller is not
// root. An Extractor is not safe for concurrent use.
type Extractor struct {
	root  *Root
	opts  Options
	dirs  []dirMeta
	stats Stats
}

// dirMeta is the metadata Finish gives a directory.
type dirMeta struct {
	rel          string
	mode         uint32
	uid, gid     int
	atime, mtime time.Time
}

// NewExtractor returns an Extractor into root.
func NewExtractor(root *Root, opts Options) *Extractor {
	return &Extractor{root: root, opts: opts}
}

// Stats returns the counts so far.
func (x *Extractor) Stats() Stats { return x.stats }

// Extract applies the tar stream r entry by entry, then Finish. before,
// when not nil, sees each header first and may refuse it. Extract stops at
// the first entry it cannot apply safely, and returns why: an error
// matching ErrUnsafe for the stream's fault (a path out of the root, a
// malformed or truncated stream), r's own error (wrapped) when reading r
// failed, else the system's. What was applied before stays, its
// directories finished too; a file being written when the stream failed
// is removed.
func (x *Extractor) Extract(r io.Reader, before func(*tar.Header) error) error {
	if err := x.extract(r, before); err != nil {
		_ = x.Finish()
		return err
	}
	return x.Finish()
}

func (x *Extractor) extract(r io.Reader, before func(*tar.Header) error) error {
	src := &sourceReader{r: r}
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			err = nil // CleanRel decides what a name may be
		}
		if err != nil {
			if src.err != nil {
				return fmt.Errorf("reading the tar stream: %w", src.err)
			}
			return unsafef("reading the tar stream: %v", err)
		}
		if before != nil {
			if err := before(hdr); err != nil {
				return err
			}
		}
		if err := x.Entry(hdr, tr); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	return nil
}

// sourceReader keeps the first error of the stream under a tar.Reader,
// which reports the stream's io.EOF inside an entry as a truncation.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Entry applies one entry whose content (for a regular file) r holds.
func (x *Extractor) Entry(hdr *tar.Header, r io.Reader) error {
	rel, err := CleanRel(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		return nil // the root itself: its metadata is the caller's
	}
	if x.opts.Special != nil {
		if handled, err := x.opts.Special(hdr, rel); handled || err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeGNUSparse, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeFifo:
	default:
		x.stats.Skipped++
		if x.opts.Skipped != nil {
			x.opts.Skipped(hdr)
		}
		return nil
	}
	dir, base := SplitRel(rel)
	dfd, err := x.root.OpenDir(dir, x.wrote)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	x.wrote(rel)
	if err := x.make(dfd, rel, base, hdr, r); err != nil {
		return err
	}
	x.stats.Entries++
	return nil
}

// wrote passes rel on to Options.Wrote.
func (x *Extractor) wrote(rel string) {
	if x.opts.Wrote != nil {
		x.opts.Wrote(rel)
	}
}

// make makes entry base in directory dfd.
func (x *Extractor) make(dfd int, rel, base string, hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag == tar.TypeDir {
		return x.dir(dfd, rel, base, hdr)
	}
	if err := x.clear(dfd, rel, base); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		if err := unix.Symlinkat(hdr.Linkname, dfd, base); err != nil {
			return &os.PathError{Op: "symlink", Path: rel, Err: err}
		}
		return x.setMeta(dfd, base, hdr, true)
	case tar.TypeLink:
		return x.hardlink(dfd, base, hdr.Linkname)
	case tar.TypeFifo:
		if err := unix.Mknodat(dfd, base, unix.S_IFIFO|0o600, 0); err != nil {
			return &os.PathError{Op: "mkfifo", Path: rel, Err: err}
		}
		return x.setMeta(dfd, base, hdr, false)
	}
	return x.file(dfd, rel, base, hdr, r)
}

// clear removes whatever is at base, so that a new entry takes its place:
// a directory only when empty, unless Options.ReplaceDirs.
func (x *Extractor) clear(dfd int, rel, base string) error {
	if x.opts.ReplaceDirs {
		return RemoveAllAt(dfd, base)
	}
	err := unix.Unlinkat(dfd, base, 0)
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR, unix.EPERM:
	default:
		return &os.PathError{Op: "unlink", Path: rel, Err: err}
	}
	switch rerr := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); rerr {
	case nil, unix.ENOENT:
		return nil
	case unix.ENOTEMPTY, unix.EEXIST:
		return &os.PathError{Op: "replace directory", Path: rel, Err: unix.ENOTEMPTY}
	case unix.ENOTDIR:
		return &os.PathError{Op: "unlink", Path: rel, Err: err}
	default:
		return &os.PathError{Op: "rmdir", Path: rel, Err: rerr}
	}
}

// dir creates directory base, or keeps one that is there (merging the
// contents), and records its metadata for Finish.
func (x *Extractor) dir(dfd int, rel, base string, hdr *tar.Header) error {
	st, ok, err := LstatAt(dfd, base)
	if err != nil {
		return err
	}
	if ok && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := RemoveAllAt(dfd, base); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		if err := unix.Mkdirat(dfd, base, 0o700); err != nil {
			return &os.PathError{Op: "mkdir", Path: rel, Err: err}
		}
	}
	x.dirs = append(x.dirs, dirMeta{rel: rel, mode: x.mode(hdr), uid: hdr.Uid, gid: hdr.Gid,
		atime: accessTime(hdr), mtime: hdr.ModTime})
	return nil
}

// file writes a regular file's content. O_EXCL|O_NOFOLLOW: whatever was
// at base has just been removed, and nothing is written through a link.
// A file whose content cannot be read or written whole is removed.
func (x *Extractor) file(dfd int, rel, base string, hdr *tar.Header, r io.Reader) error {
	fd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, base, 0)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return unsafef("the stream ends inside %s (%d of its %d bytes)", rel, n, hdr.Size)
		}
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	x.stats.Bytes += n
	return x.setMeta(dfd, base, hdr, false)
}

// hardlink links base to the existing file target (a path from the root).
// The target's directory is resolved inside the root; the target itself
// is not followed, as tar means.
func (x *Extractor) hardlink(dfd int, base, target string) error {
	trel, err := CleanRel(target)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if trel == "" {
		return unsafef("hard link to the root directory")
	}
	tdir, tbase := SplitRel(trel)
	tfd, err := x.root.OpenDir(tdir, nil)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", target, err)
	}
	defer unix.Close(tfd)
	st, ok, err := LstatAt(tfd, tbase)
	switch {
	case err != nil:
		return err
	case !ok:
		return unsafef("hard link target %q does not exist", target)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return unsafef("hard link target %q is a directory", target)
	}
	if err := unix.Linkat(tfd, tbase, dfd, base, 0); err != nil {
		return &os.PathError{Op: "link", Path: target, Err: err}
	}
	return nil
}

// Finish gives the directories made or met since the last Finish their
// owner, mode and times, deepest first: setting a child's times cannot
// disturb its parent's, and a parent's mode cannot shut its child out. A
// directory that is no longer one (a later entry replaced it) is left
// alone.
func (x *Extractor) Finish() error {
	dirs := x.dirs
	x.dirs = nil
	slices.SortStableFunc(dirs, func(a, b dirMeta) int {
		return cmp.Compare(strings.Count(b.rel, "/"), strings.Count(a.rel, "/"))
	})
	for _, d := range dirs {
		if err := x.dirMeta(d); err != nil {
			return fmt.Errorf("setting the metadata of %q: %w", d.rel, err)
		}
	}
	return nil
}

// dirMeta applies d to its directory.
func (x *Extractor) dirMeta(d dirMeta) error {
	dir, base := SplitRel(d.rel)
	dfd, err := x.root.OpenDir(dir, nil)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if st, ok, err := LstatAt(dfd, base); err != nil || !ok || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return err
	}
	if err := x.setOwnerMode(dfd, base, d.uid, d.gid, d.mode, false); err != nil {
		return err
	}
	return setTimes(dfd, base, d.atime, d.mtime)
}

// mode is the entry's mode as it is applied.
func (x *Extractor) mode(hdr *tar.Header) uint32 {
	m := uint32(hdr.Mode & 0o7777)
	if x.opts.DropSetID {
		m &^= unix.S_ISUID | unix.S_ISGID
	}
	return m
}

// setMeta gives base the entry's owner, mode and times.
func (x *Extractor) setMeta(dfd int, base string, hdr *tar.Header, symlink bool) error {
	if err := x.setOwnerMode(dfd, base, hdr.Uid, hdr.Gid, x.mode(hdr), symlink); err != nil {
		return err
	}
	return setTimes(dfd, base, accessTime(hdr), hdr.ModTime)
}

// setOwnerMode chowns (with Options.Chown) then chmods: chown clears
// set-id bits. Symlinks have no mode of their own.
func (x *Extractor) setOwnerMode(dfd int, base string, uid, gid int, mode uint32, symlink bool) error {
	if x.opts.Chown {
		if err := unix.Fchownat(dfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "chown", Path: base, Err: err}
		}
	}
	if symlink {
		return nil
	}
	// base was made by this extraction and is not a symlink, so following
	// it (fchmodat cannot do otherwise) reaches nothing else.
	if err := unix.Fchmodat(dfd, base, mode, 0); err != nil {
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
