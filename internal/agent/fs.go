package agent

// The Fs service: the sandbox::fs operations, run by the agent inside the
// sandbox, so that every path (and every symlink on the way) resolves in
// the sandbox's own filesystem, with the permissions of the image's user
// when the host names one (fsuser.go), else as root. A failure is a gRPC
// status carrying an FsError detail whose kind the daemon maps to an
// S-code.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// fsServer implements agentv1.FsServer.
type fsServer struct {
	agentv1.UnimplementedFsServer
}

var _ agentv1.FsServer = (*fsServer)(nil)

// Short names of the error kinds.
const (
	kindInvalid     = agentv1.FsErrorKind_FS_ERROR_KIND_INVALID
	kindNotFound    = agentv1.FsErrorKind_FS_ERROR_KIND_NOT_FOUND
	kindWrongType   = agentv1.FsErrorKind_FS_ERROR_KIND_WRONG_TYPE
	kindExists      = agentv1.FsErrorKind_FS_ERROR_KIND_EXISTS
	kindNotEmpty    = agentv1.FsErrorKind_FS_ERROR_KIND_NOT_EMPTY
	kindPermission  = agentv1.FsErrorKind_FS_ERROR_KIND_PERMISSION
	kindIO          = agentv1.FsErrorKind_FS_ERROR_KIND_IO
	kindBadRegex    = agentv1.FsErrorKind_FS_ERROR_KIND_BAD_REGEX
	kindAborted     = agentv1.FsErrorKind_FS_ERROR_KIND_STREAM_ABORTED
	kindUnsupported = agentv1.FsErrorKind_FS_ERROR_KIND_UNSUPPORTED
)

// grpcCodes is the status code that goes with each kind, for callers that
// read the status without the detail.
var grpcCodes = map[agentv1.FsErrorKind]codes.Code{
	kindInvalid:     codes.InvalidArgument,
	kindNotFound:    codes.NotFound,
	kindWrongType:   codes.FailedPrecondition,
	kindExists:      codes.AlreadyExists,
	kindNotEmpty:    codes.FailedPrecondition,
	kindPermission:  codes.PermissionDenied,
	kindIO:          codes.Internal,
	kindBadRegex:    codes.InvalidArgument,
	kindAborted:     codes.Aborted,
	kindUnsupported: codes.Unimplemented,
}

// fsFault is a failed operation before it becomes a status: sed reports
// one per file, every other operation as its gRPC status.
type fsFault struct {
	kind agentv1.FsErrorKind
	path string
	msg  string
}

func (f *fsFault) Error() string { return f.msg }

func (f *fsFault) detail() *agentv1.FsError {
	return &agentv1.FsError{Kind: f.kind, Path: f.path, Message: f.msg}
}

// status is the gRPC status of f, with f as its FsError detail.
func (f *fsFault) status() error {
	st := status.New(grpcCodes[f.kind], f.msg)
	if d, err := st.WithDetails(f.detail()); err == nil {
		st = d
	}
	return st.Err()
}

// fault builds an fsFault with a formatted message.
func fault(kind agentv1.FsErrorKind, path, format string, args ...any) *fsFault {
	return &fsFault{kind: kind, path: safeString(path), msg: safeString(fmt.Sprintf(format, args...))}
}

// safeString makes s fit a protobuf string field, which must be UTF-8:
// file names are bytes, and a name that is not UTF-8 would fail the whole
// answer. Invalid bytes become U+FFFD, as they would in the JSON answer.
func safeString(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// pathFault classifies the system error err of operation op on path.
func pathFault(op, path string, err error) *fsFault {
	var f *fsFault
	if errors.As(err, &f) {
		return f
	}
	return fault(errnoKind(err), path, "%s %s: %s", op, path, errnoText(err))
}

// asStatus turns an operation's error into the status the RPC returns: a
// cancelled context stays a context error, anything else becomes an
// fsFault status.
func asStatus(ctx context.Context, op, path string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return pathFault(op, path, err).status()
}

// errnoKind classifies a system error.
func errnoKind(err error) agentv1.FsErrorKind { return agentv1.ErrnoKind(err) }

// cleanPath checks that p is an absolute path without NUL bytes and returns
// it cleaned. field names it in the message.
func cleanPath(field, p string) (string, error) {
	if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return "", fault(kindInvalid, p, "%s %q is not an absolute path", field, p)
	}
	return filepath.Clean(p), nil
}

// modeBits is the permission, setuid, setgid and sticky bits of fi.
func modeBits(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Mode & 0o7777
	}
	m := uint32(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSetuid != 0 {
		m |= syscall.S_ISUID
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		m |= syscall.S_ISGID
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		m |= syscall.S_ISVTX
	}
	return m
}

// entryOf describes fi under name.
func entryOf(name string, fi fs.FileInfo) *agentv1.FsEntry {
	return &agentv1.FsEntry{
		Name:      safeString(name),
		IsDir:     fi.IsDir(),
		Size:      fi.Size(),
		Mode:      modeBits(fi),
		Mtime:     fi.ModTime().Unix(),
		IsSymlink: fi.Mode()&fs.ModeSymlink != 0,
		IsRegular: fi.Mode().IsRegular(),
	}
}

// Ls lists a directory (following a symlink to it), sorted by name. Each
// entry describes the entry itself, symlinks included.
func (s *fsServer) Ls(ctx context.Context, req *agentv1.FsLsRequest) (*agentv1.FsLsResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "ls", req.GetPath(), err)
	}
	dir, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			err = fault(kindWrongType, p, "ls %s: not a directory", p)
		}
		return nil, asStatus(ctx, "ls", p, err)
	}
	resp := &agentv1.FsLsResponse{Entries: make([]*agentv1.FsEntry, 0, len(dir))}
	for _, d := range dir {
		fi, err := d.Info()
		if err != nil {
			continue // removed since the listing
		}
		e := entryOf(d.Name(), fi)
		e.Metadata = readMetadata(filepath.Join(p, d.Name()))
		resp.Entries = append(resp.Entries, e)
	}
	sort.Slice(resp.Entries, func(i, j int) bool { return resp.Entries[i].Name < resp.Entries[j].Name })
	return resp, nil
}

// Stat describes one path without following a final symlink.
func (s *fsServer) Stat(ctx context.Context, req *agentv1.FsStatRequest) (*agentv1.FsEntry, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "stat", req.GetPath(), err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, asStatus(ctx, "stat", p, err)
	}
	e := entryOf(filepath.Base(p), fi)
	e.Metadata = readMetadata(p)
	return e, nil
}

// Mkdir creates a directory with exactly the requested mode (the umask
// does not apply). With parents, missing parents are created with 0755
// and an existing directory is not an error (created is false).
func (s *fsServer) Mkdir(ctx context.Context, req *agentv1.FsMkdirRequest) (*agentv1.FsMkdirResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "mkdir", req.GetPath(), err)
	}
	created, err := mkdir(p, req.GetMode(), req.GetParents())
	if err != nil {
		return nil, asStatus(ctx, "mkdir", p, err)
	}
	return &agentv1.FsMkdirResponse{Created: created}, nil
}

func mkdir(p string, mode uint32, parents bool) (bool, error) {
	if parents {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, pathFault("mkdir", p, err)
		}
	}
	err := syscall.Mkdir(p, mode&0o777)
	if errors.Is(err, syscall.EEXIST) {
		fi, serr := os.Stat(p)
		switch {
		case serr == nil && !fi.IsDir():
			return false, fault(kindExists, p, "mkdir %s: a file (not a directory) exists there", p)
		case parents && serr == nil:
			return false, nil
		}
		return false, fault(kindExists, p, "mkdir %s: already exists", p)
	}
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return false, fault(kindNotFound, p, "mkdir %s: parent directory %s does not exist", p, filepath.Dir(p))
		}
		return false, pathFault("mkdir", p, err)
	}
	if err := syscall.Chmod(p, mode&0o7777); err != nil {
		return true, pathFault("mkdir", p, err)
	}
	return true, nil
}

// ReadFile returns a regular file's metadata, and its content when the
// file has fewer than max_bytes bytes. The size is what was read when the
// whole file was read (files of /proc report 0 but have content).
func (s *fsServer) ReadFile(ctx context.Context, req *agentv1.FsReadFileRequest) (*agentv1.FsReadFileResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "read", req.GetPath(), err)
	}
	f, fi, err := openRegular("read", p)
	if err != nil {
		return nil, asStatus(ctx, "read", p, err)
	}
	defer f.Close()
	resp := &agentv1.FsReadFileResponse{Entry: entryOf(filepath.Base(p), fi)}
	limit := req.GetMaxBytes()
	if fi.Size() >= limit {
		return resp, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, asStatus(ctx, "read", p, err)
	}
	resp.Entry.Size = max(resp.Entry.Size, int64(len(data)))
	if int64(len(data)) < limit {
		// EOF came first: this is the whole file.
		resp.HasContent, resp.Content = true, data
	}
	return resp, nil
}

// openRegular opens p for reading, following symlinks, when it is a
// regular file: a directory is a wrong type, a device or pipe unsupported
// (reading one could block or never end).
func openRegular(op, p string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, pathFault(op, p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, pathFault(op, p, err)
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, nil, fault(kindWrongType, p, "%s %s: is a directory", op, p)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, fault(kindUnsupported, p, "%s %s: not a regular file (%s)", op, p, fileType(fi.Mode()))
	}
	return f, fi, nil
}

// fileType names the type of a non-regular file for messages.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	}
	return "regular file"
}

// Rm removes a file, symlink or empty directory; with recursive, a
// directory and everything in it. Symlinks are removed, never followed.
func (s *fsServer) Rm(ctx context.Context, req *agentv1.FsRmRequest) (*agentv1.FsRmResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "rm", req.GetPath(), err)
	}
	if p == "/" {
		return nil, fault(kindInvalid, p, "rm /: refusing to remove the root directory").status()
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, asStatus(ctx, "rm", p, err)
	}
	if fi.IsDir() && req.GetRecursive() {
		err = os.RemoveAll(p)
	} else {
		err = os.Remove(p)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			err = fault(kindNotEmpty, p, "rm %s: directory not empty (set recursive to remove it and its content)", p)
		}
	}
	if err != nil {
		return nil, asStatus(ctx, "rm", p, err)
	}
	return &agentv1.FsRmResponse{Removed: true}, nil
}

// Mv renames src to dst. Without overwrite an existing dst is an error;
// with it, dst is replaced (a directory only when it is empty).
func (s *fsServer) Mv(ctx context.Context, req *agentv1.FsMvRequest) (*agentv1.FsMvResponse, error) {
	src, err := cleanPath("src", req.GetSrc())
	if err != nil {
		return nil, asStatus(ctx, "mv", req.GetSrc(), err)
	}
	dst, err := cleanPath("dst", req.GetDst())
	if err != nil {
		return nil, asStatus(ctx, "mv", req.GetDst(), err)
	}
	if err := move(src, dst, req.GetOverwrite()); err != nil {
		return nil, asStatus(ctx, "mv", src, err)
	}
	return &agentv1.FsMvResponse{Moved: true}, nil
}

func move(src, dst string, overwrite bool) error {
	if src == "/" || dst == "/" {
		return fault(kindInvalid, src, "mv %s %s: cannot move the root directory", src, dst)
	}
	if _, err := os.Lstat(src); err != nil {
		return pathFault("mv", src, err)
	}
	if _, err := os.Stat(filepath.Dir(dst)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fault(kindNotFound, dst, "mv %s %s: directory %s does not exist", src, dst, filepath.Dir(dst))
		}
		return pathFault("mv", dst, err)
	}
	if src == dst {
		return nil
	}
	if _, err := os.Lstat(dst); err == nil && !overwrite {
		return fault(kindExists, dst, "mv %s %s: %s already exists (set overwrite to replace it)", src, dst, dst)
	}
	if err := os.Rename(src, dst); err != nil {
		switch {
		case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
			return fault(kindNotEmpty, dst, "mv %s %s: %s is a directory that is not empty", src, dst, dst)
		case errors.Is(err, syscall.EXDEV):
			return fault(kindUnsupported, dst, "mv %s %s: moving across filesystems is not supported", src, dst)
		case errors.Is(err, syscall.EINVAL):
			return fault(kindInvalid, dst, "mv %s %s: cannot move a directory into itself", src, dst)
		}
		return fault(errnoKind(err), dst, "mv %s %s: %s", src, dst, errnoText(err))
	}
	return nil
}

// Chmod sets the mode and/or owner of path (following a symlink), and
// with recursive of everything below it (symlinks below get their owner
// changed, never their target's mode). It reports how many paths changed.
func (s *fsServer) Chmod(ctx context.Context, req *agentv1.FsChmodRequest) (*agentv1.FsChmodResponse, error) {
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return nil, asStatus(ctx, "chmod", req.GetPath(), err)
	}
	if req.Mode == nil && req.Uid == nil && req.Gid == nil {
		return nil, fault(kindInvalid, p, "chmod %s: give a mode, a uid or a gid", p).status()
	}
	uid, gid := -1, -1
	if req.Uid != nil {
		uid = int(req.GetUid())
	}
	if req.Gid != nil {
		gid = int(req.GetGid())
	}
	apply := func(path string, link bool) error {
		if uid >= 0 || gid >= 0 {
			if err := os.Lchown(path, uid, gid); err != nil {
				return pathFault("chmod", path, err)
			}
		}
		if req.Mode != nil && !link {
			if err := syscall.Chmod(path, req.GetMode()&0o7777); err != nil {
				return pathFault("chmod", path, err)
			}
		}
		return nil
	}
	root, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, asStatus(ctx, "chmod", p, err)
	}
	if !req.GetRecursive() {
		if err := apply(root, false); err != nil {
			return nil, asStatus(ctx, "chmod", p, err)
		}
		return &agentv1.FsChmodResponse{Updated: 1}, nil
	}
	var updated int64
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return pathFault("chmod", path, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := apply(path, d.Type()&fs.ModeSymlink != 0); err != nil {
			return err
		}
		updated++
		return nil
	})
	if err != nil {
		return nil, asStatus(ctx, "chmod", p, err)
	}
	return &agentv1.FsChmodResponse{Updated: updated}, nil
}
