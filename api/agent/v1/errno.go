package agentv1

import (
	"errors"
	"syscall"
)

// ErrnoKind classifies a system error of a filesystem operation: the
// agent's for the sandbox's files, the daemon's for a volume's (issue 40).
// An error without an errno is FS_ERROR_KIND_IO.
func ErrnoKind(err error) FsErrorKind {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return FsErrorKind_FS_ERROR_KIND_IO
	}
	switch errno {
	case syscall.ENOENT:
		return FsErrorKind_FS_ERROR_KIND_NOT_FOUND
	case syscall.ENOTDIR, syscall.EISDIR:
		return FsErrorKind_FS_ERROR_KIND_WRONG_TYPE
	case syscall.EEXIST:
		return FsErrorKind_FS_ERROR_KIND_EXISTS
	case syscall.ENOTEMPTY:
		return FsErrorKind_FS_ERROR_KIND_NOT_EMPTY
	case syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ETXTBSY:
		return FsErrorKind_FS_ERROR_KIND_PERMISSION
	case syscall.EXDEV, syscall.EOPNOTSUPP, syscall.ENOSYS:
		return FsErrorKind_FS_ERROR_KIND_UNSUPPORTED
	case syscall.EINVAL, syscall.ENAMETOOLONG, syscall.ELOOP:
		return FsErrorKind_FS_ERROR_KIND_INVALID
	}
	return FsErrorKind_FS_ERROR_KIND_IO
}
