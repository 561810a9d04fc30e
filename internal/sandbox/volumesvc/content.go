package volumesvc

// issue 40: a volume's files from the host (sandbox::volume::fs::*, E2B's
// /volumecontent routes). Each call mounts the volume as a sandbox's
// create does (volumes.Store.Acquire, so it cannot be deleted meanwhile)
// and works through an os.Root of its directory: no path, and no symlink
// the volume holds, leads out of it.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
)

// maxListDepth bounds a listing's depth; maxListEntries its entries.
const (
	maxListDepth   = 10
	maxListEntries = 10_000
)

// contentUser is the prefix of the holder id a content call mounts its
// volume under.
const contentUser = "volume-content-"

// inVolume opens the caller's volume name for fn, mounted for the call.
func (v *Service) inVolume(ctx context.Context, name string, fn func(*os.Root) error) error {
	s, err := v.store()
	if err != nil {
		return err
	}
	user := contentUser + uuid.NewString()
	uses, err := s.Acquire(auth.OwnerFrom(ctx), user, []string{name})
	if err != nil {
		return err
	}
	defer s.Release(user)
	root, err := os.OpenRoot(uses[0].Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fn(root)
}

// rel is p, a path in the volume, relative to its root ("." for "/").
func rel(p string) (string, error) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", errdefs.New(errdefs.CodeFSInvalid, "path %q is not a path in the volume", p)
	}
	r := strings.TrimPrefix(path.Clean("/"+p), "/")
	if r == "" {
		return ".", nil
	}
	return r, nil
}

// abs is r's path from the volume's root.
func abs(r string) string { return path.Clean("/" + r) }

// fsError maps a system error of op on r to its S-code; a path that
// would leave the volume is S210.
func fsError(op, r string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	kind := agentv1.ErrnoKind(err)
	if kind == agentv1.FsErrorKind_FS_ERROR_KIND_IO && strings.Contains(msg, "escapes") {
		kind = agentv1.FsErrorKind_FS_ERROR_KIND_INVALID
	}
	return agenterr.FsFault(&agentv1.FsError{Kind: kind, Message: op + " " + abs(r) + ": " + msg})
}

// entryOf describes the entry r of root itself.
func entryOf(root *os.Root, r string) (api.VolumeEntry, error) {
	fi, err := root.Lstat(r)
	if err != nil {
		return api.VolumeEntry{}, fsError("stat", r, err)
	}
	e := api.VolumeEntry{Name: path.Base(abs(r)), Path: abs(r), Type: "unknown", Size: fi.Size()}
	switch {
	case fi.Mode().IsRegular():
		e.Type = "file"
	case fi.IsDir():
		e.Type = "directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = "symlink"
		e.Target, _ = root.Readlink(r)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Mode, e.UID, e.GID = st.Mode&0o7777, st.Uid, st.Gid
		e.Atime = time.Unix(st.Atim.Unix()).UTC().Format(time.RFC3339Nano)
		e.Ctime = time.Unix(st.Ctim.Unix()).UTC().Format(time.RFC3339Nano)
	}
	e.Mtime = fi.ModTime().UTC().Format(time.RFC3339Nano)
	return e, nil
}

// StatVolumePath is sandbox::volume::fs::stat.
func (v *Service) StatVolumePath(ctx context.Context, req api.VolumeFsRequest) (api.VolumeEntry, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeEntry{}, err
	}
	var e api.VolumeEntry
	err = v.inVolume(ctx, req.Name, func(root *os.Root) (err error) {
		e, err = entryOf(root, r)
		return err
	})
	return e, err
}

// ListVolumeDir is sandbox::volume::fs::list: the entries below a
// directory to depth levels, by path; symlinks are not followed.
func (v *Service) ListVolumeDir(ctx context.Context, req api.VolumeFsListRequest) (api.VolumeFsListResponse, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeFsListResponse{}, err
	}
	depth := max(req.Depth, 1)
	if depth > maxListDepth {
		return api.VolumeFsListResponse{}, errdefs.New(errdefs.CodeFSInvalid, "depth %d: at most %d", req.Depth, maxListDepth)
	}
	resp := api.VolumeFsListResponse{Entries: []api.VolumeEntry{}}
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		if e, err := entryOf(root, r); err != nil {
			return err
		} else if e.Type != "directory" {
			return errdefs.New(errdefs.CodeFSWrongType, "list %s: not a directory", e.Path)
		}
		return listInto(root, r, depth, &resp.Entries)
	})
	slices.SortFunc(resp.Entries, func(a, b api.VolumeEntry) int { return strings.Compare(a.Path, b.Path) })
	return resp, err
}

// listInto appends the entries of directory r, and of its directories
// down to depth levels.
func listInto(root *os.Root, r string, depth int, out *[]api.VolumeEntry) error {
	d, err := root.Open(r)
	if err != nil {
		return fsError("list", r, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fsError("list", r, err)
	}
	for _, n := range names {
		if len(*out) == maxListEntries {
			return errdefs.New(errdefs.CodeFSInvalid, "list %s: more than %d entries; list a smaller directory or depth", abs(r), maxListEntries)
		}
		e, err := entryOf(root, path.Join(r, n))
		if err != nil {
			continue // removed since the listing
		}
		*out = append(*out, e)
		if e.Type == "directory" && depth > 1 {
			if err := listInto(root, path.Join(r, n), depth-1, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadVolumeFile is sandbox::volume::fs::read: a regular file of at most
// api.MaxVolumeReadBytes.
func (v *Service) ReadVolumeFile(ctx context.Context, req api.VolumeFsRequest) (api.VolumeFsReadResponse, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeFsReadResponse{}, err
	}
	var resp api.VolumeFsReadResponse
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		// Not blocking on a FIFO the sandbox left; the volume is nodev.
		f, err := root.OpenFile(r, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return fsError("read", r, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fsError("read", r, err)
		}
		if !fi.Mode().IsRegular() {
			return errdefs.New(errdefs.CodeFSWrongType, "read %s: not a regular file", abs(r))
		}
		data, err := io.ReadAll(io.LimitReader(f, api.MaxVolumeReadBytes+1))
		if err != nil {
			return fsError("read", r, err)
		}
		if len(data) > api.MaxVolumeReadBytes {
			return errdefs.New(errdefs.CodeFSUnsupported, "read %s: larger than %d bytes", abs(r), api.MaxVolumeReadBytes)
		}
		if resp.Entry, err = entryOf(root, r); err != nil {
			return err
		}
		resp.ContentB64 = base64.StdEncoding.EncodeToString(data)
		return nil
	})
	return resp, err
}

// WriteVolumeFile is sandbox::volume::fs::write: the file appears whole
// once its content is written (a temporary file renamed onto it); an
// existing one is replaced only with force. The volume's size bounds it.
func (v *Service) WriteVolumeFile(ctx context.Context, req api.VolumeFsWriteRequest) (api.VolumeEntry, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeEntry{}, err
	}
	if r == "." {
		return api.VolumeEntry{}, errdefs.New(errdefs.CodeFSWrongType, "write /: the volume's root is a directory")
	}
	body := req.Body
	switch {
	case body != nil && req.ContentB64 != nil:
		return api.VolumeEntry{}, errdefs.Malformed("give content_b64 or a body, not both")
	case body == nil:
		var data []byte
		if req.ContentB64 != nil {
			if data, err = base64.StdEncoding.DecodeString(*req.ContentB64); err != nil {
				return api.VolumeEntry{}, errdefs.Malformed("content_b64 is not base64: %v", err)
			}
		}
		body = strings.NewReader(string(data))
	}
	var e api.VolumeEntry
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		if fi, err := root.Lstat(r); err == nil {
			if !fi.Mode().IsRegular() {
				return errdefs.New(errdefs.CodeFSWrongType, "write %s: not a regular file", abs(r))
			}
			if !req.Force {
				return errdefs.New(errdefs.CodeFSExists, "write %s: the file exists", abs(r)).WithFix(map[string]any{"force": true}, "set force to replace it")
			}
		}
		tmp := path.Join(path.Dir(r), ".hutch-tmp-"+uuid.NewString())
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fsError("write", r, err)
		}
		err = func() error {
			if _, err := io.Copy(f, body); err != nil {
				return err
			}
			if err := own(f, req.VolumeOwnership); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			return f.Close()
		}()
		if err == nil {
			err = root.Rename(tmp, r)
		}
		if err != nil {
			f.Close()
			_ = root.Remove(tmp)
			return fsError("write", r, err)
		}
		e, err = entryOf(root, r)
		return err
	})
	return e, err
}

// own gives f the requested owner and mode.
func own(f *os.File, o api.VolumeOwnership) error {
	if o.UID != nil || o.GID != nil {
		uid, gid := -1, -1
		if o.UID != nil {
			uid = int(*o.UID)
		}
		if o.GID != nil {
			gid = int(*o.GID)
		}
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if o.Mode != nil {
		return syscall.Fchmod(int(f.Fd()), *o.Mode&0o7777)
	}
	return nil
}

// MakeVolumeDir is sandbox::volume::fs::mkdir; with force, missing
// parents are made and an existing directory is kept.
func (v *Service) MakeVolumeDir(ctx context.Context, req api.VolumeFsMkdirRequest) (api.VolumeEntry, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeEntry{}, err
	}
	var e api.VolumeEntry
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		if req.Force {
			err = root.MkdirAll(r, 0o755)
		} else {
			err = root.Mkdir(r, 0o755)
		}
		if err != nil {
			return fsError("mkdir", r, err)
		}
		if err := setOwnership(root, r, req.VolumeOwnership); err != nil {
			return err
		}
		e, err = entryOf(root, r)
		return err
	})
	return e, err
}

// setOwnership gives r of root the requested owner and mode, through a
// handle of r itself: a symlink is refused, never followed out.
func setOwnership(root *os.Root, r string, o api.VolumeOwnership) error {
	fi, err := root.Lstat(r)
	if err != nil {
		return fsError("set", r, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return errdefs.New(errdefs.CodeFSUnsupported, "set %s: a symlink's owner and mode are not set", abs(r))
	}
	f, err := root.OpenFile(r, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fsError("set", r, err)
	}
	defer f.Close()
	return fsError("set", r, own(f, o))
}

// SetVolumePath is sandbox::volume::fs::set: an entry's owner and mode.
func (v *Service) SetVolumePath(ctx context.Context, req api.VolumeFsSetRequest) (api.VolumeEntry, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeEntry{}, err
	}
	var e api.VolumeEntry
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		if err := setOwnership(root, r, req.VolumeOwnership); err != nil {
			return err
		}
		e, err = entryOf(root, r)
		return err
	})
	return e, err
}

// RemoveVolumePath is sandbox::volume::fs::remove: a file, symlink or
// directory with what it holds; the volume's root is refused.
func (v *Service) RemoveVolumePath(ctx context.Context, req api.VolumeFsRequest) (api.VolumeFsRemoveResponse, error) {
	r, err := rel(req.Path)
	if err != nil {
		return api.VolumeFsRemoveResponse{}, err
	}
	if r == "." {
		return api.VolumeFsRemoveResponse{}, errdefs.New(errdefs.CodeFSInvalid, "remove /: refusing to remove the volume's root")
	}
	err = v.inVolume(ctx, req.Name, func(root *os.Root) error {
		if _, err := root.Lstat(r); err != nil {
			return fsError("remove", r, err)
		}
		return fsError("remove", r, root.RemoveAll(r))
	})
	return api.VolumeFsRemoveResponse{Removed: err == nil}, err
}
