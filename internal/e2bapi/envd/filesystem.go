package envd

// filesystem.Filesystem's unary methods, each a sandbox::fs::* function.

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
	"github.com/hutch-dev/hutch/api/e2b/envd/filesystem/filesystemconnect"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Bounds of ListDir.
const (
	maxListDepth   = 64
	maxListEntries = 10000
)

// filesystemService is filesystem.Filesystem.
type filesystemService struct{ *server }

var _ filesystemconnect.FilesystemHandler = (*filesystemService)(nil)

// Stat describes a path (a symlink itself, not its target).
func (s *filesystemService) Stat(ctx context.Context, req *connect.Request[pb.StatRequest]) (*connect.Response[pb.StatResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	e, err := s.statOwned(ctx, sc, s.resolve(ctx, sc, req.Msg.GetPath()))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.StatResponse{Entry: e}), nil
}

// MakeDir creates a directory and its missing parents; an existing one is
// AlreadyExists.
func (s *filesystemService) MakeDir(ctx context.Context, req *connect.Request[pb.MakeDirRequest]) (*connect.Response[pb.MakeDirResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	p := s.resolve(ctx, sc, req.Msg.GetPath())
	made, err := call[api.FsMkdirResponse](ctx, s.t, api.FnFsMkdir, api.FsMkdirRequest{SandboxID: sc.sandbox, User: sc.user, Path: p, Parents: true})
	if err != nil {
		return nil, err
	}
	if !made.Created {
		return nil, connect.NewError(connect.CodeAlreadyExists, errorf("%s exists already", p))
	}
	e, err := s.statOwned(ctx, sc, p)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.MakeDirResponse{Entry: e}), nil
}

// Move renames a path, replacing what the destination held.
func (s *filesystemService) Move(ctx context.Context, req *connect.Request[pb.MoveRequest]) (*connect.Response[pb.MoveResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	dst := s.resolve(ctx, sc, req.Msg.GetDestination())
	mv := api.FsMvRequest{SandboxID: sc.sandbox, User: sc.user, Src: s.resolve(ctx, sc, req.Msg.GetSource()), Dst: dst, Overwrite: true}
	if _, err := call[api.FsMvResponse](ctx, s.t, api.FnFsMv, mv); err != nil {
		return nil, err
	}
	e, err := s.statOwned(ctx, sc, dst)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.MoveResponse{Entry: e}), nil
}

// Remove removes a file, or a directory with what it holds; a path that
// is not there is removed already, as envd has it.
func (s *filesystemService) Remove(ctx context.Context, req *connect.Request[pb.RemoveRequest]) (*connect.Response[pb.RemoveResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	rm := api.FsRmRequest{SandboxID: sc.sandbox, User: sc.user, Path: s.resolve(ctx, sc, req.Msg.GetPath()), Recursive: true}
	_, err = functions.Call[api.FsRmResponse](ctx, s.t, api.FnFsRm, rm)
	if err != nil && !errdefs.Is(err, errdefs.CodeFSNotFound) {
		return nil, connectError(err)
	}
	return connect.NewResponse(&pb.RemoveResponse{}), nil
}

// ListDir lists a directory and, up to depth levels (1 by default), the
// directories below it, as envd walks them: depth first, each directory's
// entries by name, each directory followed by what it holds; symlinks
// below the root are not followed.
func (s *filesystemService) ListDir(ctx context.Context, req *connect.Request[pb.ListDirRequest]) (*connect.Response[pb.ListDirResponse], error) {
	sc, err := scopeOf(req.Header(), "")
	if err != nil {
		return nil, err
	}
	depth := max(req.Msg.GetDepth(), 1)
	if depth > maxListDepth {
		return nil, invalid("depth %d is more than %d", depth, maxListDepth)
	}
	out := &pb.ListDirResponse{}
	root := s.resolve(ctx, sc, req.Msg.GetPath())
	if err := s.walk(ctx, sc, root, depth, out); err != nil {
		return nil, err
	}
	s.fillOwnership(ctx, sc, root, depth, out.Entries)
	return connect.NewResponse(out), nil
}

// walk appends to out the entries of dir and, depth-1 levels down, of the
// directories in it, depth first. Below the root, a directory that went
// or that the user may not read lists nothing.
func (s *filesystemService) walk(ctx context.Context, sc scope, dir string, depth uint32, out *pb.ListDirResponse) error {
	ls, err := call[api.FsLsResponse](ctx, s.t, api.FnFsLs, api.FsLsRequest{SandboxID: sc.sandbox, User: sc.user, Path: dir})
	if err != nil {
		return err
	}
	if len(out.Entries)+len(ls.Entries) > maxListEntries {
		return connect.NewError(connect.CodeResourceExhausted, errorf("more than %d entries: list less deep", maxListEntries))
	}
	slices.SortFunc(ls.Entries, func(a, b api.FsEntry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range ls.Entries {
		p := path.Join(dir, e.Name)
		out.Entries = append(out.Entries, entryInfo(p, e))
		if depth > 1 && e.IsDir && !e.IsSymlink {
			if err := s.walk(ctx, sc, p, depth-1, out); connect.CodeOf(err) == connect.CodeResourceExhausted {
				return err
			}
		}
	}
	return nil
}

// stat is the entry of path p.
func (s *filesystemService) stat(ctx context.Context, sc scope, p string) (*pb.EntryInfo, error) {
	e, err := call[api.FsEntry](ctx, s.t, api.FnFsStat, api.FsStatRequest{SandboxID: sc.sandbox, User: sc.user, Path: p})
	if err != nil {
		return nil, err
	}
	return entryInfo(p, e), nil
}

// statOwned is stat with the owner, group and symlink target.
func (s *filesystemService) statOwned(ctx context.Context, sc scope, p string) (*pb.EntryInfo, error) {
	e, err := s.stat(ctx, sc, p)
	if err == nil {
		s.fillOwnership(ctx, sc, p, 0, []*pb.EntryInfo{e})
	}
	return e, err
}

// entryInfo is envd's description of the entry e at path p. hutch's
// entries carry no owner, group or symlink target: fillOwnership adds
// them.
func entryInfo(p string, e api.FsEntry) *pb.EntryInfo {
	perm, _ := strconv.ParseUint(e.Mode, 8, 32)
	mode := fs.FileMode(perm & 0o777)
	typ := pb.FileType_FILE_TYPE_FILE
	switch {
	case e.IsSymlink:
		typ, mode = pb.FileType_FILE_TYPE_SYMLINK, mode|fs.ModeSymlink
	case e.IsDir:
		typ, mode = pb.FileType_FILE_TYPE_DIRECTORY, mode|fs.ModeDir
	}
	return &pb.EntryInfo{
		Name:         path.Base(p),
		Type:         typ,
		Path:         p,
		Size:         e.Size,
		Mode:         uint32(perm & 0o777),
		Permissions:  mode.String(),
		ModifiedTime: timestamppb.New(time.Unix(e.Mtime, 0)),
		Metadata:     e.Metadata,
	}
}
