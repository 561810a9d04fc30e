package agent

// Streamed transfers and the atomic replacement of files that write,
// upload and sed share.

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

const (
	// ChunkBytes is the size of one data message of a streamed transfer.
	ChunkBytes = agentv1.ChunkBytes
	// defaultFileMode is the mode of a file written without one.
	defaultFileMode = 0o644
	// maxSymlinkHops bounds the symlinks followed to a write's target.
	maxSymlinkHops = 40
	// tempPrefix begins the names of atomicFile's temporary files, which
	// watches never show (fs_watch.go).
	tempPrefix = ".hutch-tmp-"
)

// writeTarget resolves the file a write of p goes to: p itself, or, when p
// is a symlink (even a dangling one), the file it finally points to, so
// that the link survives the write. fi describes an existing target (nil
// when there is none).
func writeTarget(p string) (target string, fi fs.FileInfo, err error) {
	target = p
	for range maxSymlinkHops {
		fi, err = os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return target, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return target, fi, nil
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = filepath.Clean(link)
	}
	return "", nil, syscall.ELOOP
}

// atomicFile is a temporary file next to its target that replaces the
// target on commit: readers see the old file or the new one, never a part.
type atomicFile struct {
	f      *os.File
	target string
	mode   uint32
	// owner is the existing target's owner, kept by the new file.
	owner *syscall.Stat_t
	// metadata is set on the new file as its user metadata (issue 40).
	metadata map[string]string
}

// createAtomic starts the replacement of target. mode nil keeps the mode
// of an existing target (defaultFileMode for a new one); existing
// describes the current target, nil when there is none.
func createAtomic(target string, mode *uint32, existing fs.FileInfo) (*atomicFile, error) {
	a := &atomicFile{target: target, mode: defaultFileMode}
	if existing != nil {
		a.mode = modeBits(existing)
		a.owner, _ = existing.Sys().(*syscall.Stat_t)
	}
	if mode != nil {
		a.mode = *mode & 0o7777
	}
	f, err := os.CreateTemp(filepath.Dir(target), tempPrefix+"*")
	if err != nil {
		return nil, err
	}
	a.f = f
	return a, nil
}

// Write writes to the temporary file.
func (a *atomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// commit sets the mode and owner, syncs the data and renames the file onto
// its target. On failure the temporary file is removed.
func (a *atomicFile) commit() error {
	err := func() error {
		if a.owner != nil {
			if err := a.f.Chown(int(a.owner.Uid), int(a.owner.Gid)); err != nil {
				return err
			}
		}
		// After chown, which clears setuid and setgid.
		if err := syscall.Fchmod(int(a.f.Fd()), a.mode); err != nil {
			return err
		}
		if err := setMetadata(int(a.f.Fd()), a.metadata); err != nil {
			return err
		}
		if err := a.f.Sync(); err != nil {
			return err
		}
		if err := a.f.Close(); err != nil {
			return err
		}
		return os.Rename(a.f.Name(), a.target)
	}()
	if err != nil {
		a.abort()
		return err
	}
	if d, err := os.Open(filepath.Dir(a.target)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// abort removes the temporary file; the target is untouched.
func (a *atomicFile) abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// fileWriter is where an upload's bytes go: an atomicFile, or a character
// device (/dev/null) written directly.
type fileWriter interface {
	io.Writer
	commit() error
	abort()
}

// device is a character device written in place.
type device struct{ f *os.File }

func (d device) Write(p []byte) (int, error) { return d.f.Write(p) }
func (d device) commit() error               { return d.f.Close() }
func (d device) abort()                      { d.f.Close() }

// openWrite prepares the write of p: it resolves the target, creates
// missing parents when asked and opens the writer. A missing parent is
// NOT_FOUND naming the parent; a directory is WRONG_TYPE.
func openWrite(op, p string, mode *uint32, parents bool) (fileWriter, string, error) {
	target, fi, err := writeTarget(p)
	if err != nil {
		return nil, "", pathFault(op, p, err)
	}
	if fi != nil {
		switch {
		case fi.IsDir():
			return nil, "", fault(kindWrongType, p, "%s %s: is a directory", op, p)
		case fi.Mode()&fs.ModeCharDevice != 0:
			f, err := os.OpenFile(target, os.O_WRONLY, 0)
			if err != nil {
				return nil, "", pathFault(op, p, err)
			}
			return device{f}, target, nil
		case !fi.Mode().IsRegular():
			return nil, "", fault(kindUnsupported, p, "%s %s: not a regular file (%s)", op, p, fileType(fi.Mode()))
		}
	}
	dir := filepath.Dir(target)
	if parents {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", pathFault(op, p, err)
		}
	}
	a, err := createAtomic(target, mode, fi)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fault(kindNotFound, p, "%s %s: parent directory %s does not exist", op, p, dir)
		}
		return nil, "", pathFault(op, p, err)
	}
	return a, target, nil
}

// Upload writes a file from a stream. Nothing appears at the path unless
// the stream delivers its last message (eof) and ends cleanly.
func (s *fsServer) Upload(stream agentv1.Fs_UploadServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return uploadAborted(ctx, "", err)
	}
	h := first.GetHeader()
	if h == nil {
		return fault(kindInvalid, "", "upload: the first message has no header").status()
	}
	p, err := cleanPath("path", h.GetPath())
	if err != nil {
		return asStatus(ctx, "write", h.GetPath(), err)
	}
	if err := checkMetadata(p, h.GetMetadata()); err != nil {
		return asStatus(ctx, "write", p, err)
	}
	w, target, err := openWrite("write", p, h.Mode, h.GetParents())
	if err != nil {
		return asStatus(ctx, "write", p, err)
	}
	if len(h.GetMetadata()) > 0 {
		a, ok := w.(*atomicFile)
		if !ok {
			w.abort()
			return fault(kindUnsupported, p, "write %s: a device keeps no metadata", p).status()
		}
		a.metadata = h.GetMetadata()
	}
	n, err := receive(stream, w, first, p)
	if err != nil {
		w.abort()
		if f := (*fsFault)(nil); errors.As(err, &f) {
			return f.status()
		}
		return uploadAborted(ctx, p, err)
	}
	if err := w.commit(); err != nil {
		return asStatus(ctx, "write", p, err)
	}
	return stream.SendAndClose(&agentv1.FsUploadResponse{BytesWritten: n, Path: safeString(target)})
}

// receive copies the stream's data into w, the writer of p, starting with
// msg, until the message marked eof. A write error is an fsFault; a stream
// error is returned as it is.
func receive(stream agentv1.Fs_UploadServer, w io.Writer, msg *agentv1.FsUploadRequest, p string) (int64, error) {
	var n int64
	for {
		if len(msg.GetData()) > 0 {
			m, err := w.Write(msg.GetData())
			n += int64(m)
			if err != nil {
				return n, pathFault("write", p, err)
			}
		}
		if msg.GetEof() {
			return n, nil
		}
		var err error
		if msg, err = stream.Recv(); err != nil {
			return n, err
		}
	}
}

// uploadAborted is the status of an upload whose stream ended early.
func uploadAborted(ctx context.Context, p string, err error) error {
	if ctx.Err() == nil && errors.Is(err, io.EOF) {
		return fault(kindAborted, p, "upload of %s: the stream ended before the last chunk; nothing was written", p).status()
	}
	return fault(kindAborted, p, "upload of %s aborted: %v; nothing was written", p, err).status()
}

// Download streams a regular file: its metadata first, then its data in
// ChunkBytes messages. A file that reports a size is sent up to that size
// (a file that shrinks meanwhile is an I/O error); one that reports 0, as
// files of /proc do, is sent to its end.
func (s *fsServer) Download(req *agentv1.FsDownloadRequest, stream agentv1.Fs_DownloadServer) error {
	ctx := stream.Context()
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return asStatus(ctx, "download", req.GetPath(), err)
	}
	f, fi, err := openRegular("download", p)
	if err != nil {
		return asStatus(ctx, "download", p, err)
	}
	defer f.Close()
	if err := stream.Send(&agentv1.FsDownloadResponse{Entry: entryOf(filepath.Base(p), fi)}); err != nil {
		return err
	}
	var r io.Reader = f
	size := fi.Size()
	if size > 0 {
		r = io.LimitReader(f, size)
	}
	buf := make([]byte, ChunkBytes)
	var sent int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if serr := stream.Send(&agentv1.FsDownloadResponse{Data: buf[:n]}); serr != nil {
				return serr
			}
			sent += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return asStatus(ctx, "download", p, err)
		}
	}
	if size > 0 && sent < size {
		return fault(kindIO, p, "download %s: the file shrank from %d to %d bytes while being read", p, size, sent).status()
	}
	return nil
}
