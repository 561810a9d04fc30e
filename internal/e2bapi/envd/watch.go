package envd

// filesystem.Filesystem's WatchDir: sandbox::fs::watch as envd's stream (a
// start event, then filesystem events and keepalives), and the conversion
// of hutch's changes that the polled watchers share.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
	"github.com/hutch-dev/hutch/internal/functions"
)

// watch is an open sandbox::fs::watch of dir.
type watch struct {
	st           *functions.Stream
	s            *filesystemService
	sc           scope
	dir          string
	includeEntry bool
}

// openWatch starts watching directory p (recursively, with entries) for
// the request of h, and waits until the watch is in place (its "open"
// event); the caller closes w.st.
func (s *filesystemService) openWatch(ctx context.Context, h http.Header, p string, recursive, includeEntry bool) (*watch, error) {
	sc, err := scopeOf(h, "")
	if err != nil {
		return nil, err
	}
	dir := s.resolve(ctx, sc, p)
	st, err := stream(ctx, s.t, api.FnFsWatch, api.FsWatchRequest{SandboxID: sc.sandbox, Path: dir, Recursive: recursive, User: sc.user})
	if err != nil {
		return nil, err
	}
	if _, err := st.Expect(ctx, api.EventStreamOpen); err != nil {
		st.Close()
		return nil, connectError(err)
	}
	return &watch{st: st, s: s, sc: sc, dir: dir, includeEntry: includeEntry}, nil
}

// next is the next change as envd's events (none for an overflow, two for
// a rename: the old name's and the new one's); io.EOF when the watch ended.
func (w *watch) next(ctx context.Context, idle func(context.Context) (functions.Event, error)) ([]*pb.FilesystemEvent, error) {
	ev, err := idle(ctx)
	if err != nil {
		return nil, err
	}
	change, ok := ev.Data.(api.FsWatchEvent)
	if !ok {
		return nil, nil
	}
	var out []*pb.FilesystemEvent
	add := func(p string, typ pb.EventType) {
		fe := &pb.FilesystemEvent{Name: w.relative(p), Type: typ}
		if w.includeEntry && typ != pb.EventType_EVENT_TYPE_REMOVE && !(typ == pb.EventType_EVENT_TYPE_RENAME && change.OldPath != "") {
			if e, err := w.s.stat(ctx, w.sc, p); err == nil {
				fe.Entry = e
			}
		}
		out = append(out, fe)
	}
	switch change.Type {
	case api.WatchCreate:
		add(change.Path, pb.EventType_EVENT_TYPE_CREATE)
	case api.WatchWrite:
		add(change.Path, pb.EventType_EVENT_TYPE_WRITE)
	case api.WatchRemove:
		add(change.Path, pb.EventType_EVENT_TYPE_REMOVE)
	case api.WatchChmod:
		add(change.Path, pb.EventType_EVENT_TYPE_CHMOD)
	case api.WatchRename:
		if change.OldPath == "" {
			add(change.Path, pb.EventType_EVENT_TYPE_RENAME)
			break
		}
		add(change.OldPath, pb.EventType_EVENT_TYPE_RENAME)
		add(change.Path, pb.EventType_EVENT_TYPE_CREATE)
	}
	return out, nil
}

// relative is p relative to the watched directory, as envd names events.
func (w *watch) relative(p string) string {
	p = path.Clean(p)
	if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(w.dir, "/")+"/"); ok {
		return rel
	}
	return p
}

// WatchDir streams the changes under a directory until the client goes,
// the stream's deadline passes or the sandbox stops.
func (s *filesystemService) WatchDir(ctx context.Context, req *connect.Request[pb.WatchDirRequest], out *connect.ServerStream[pb.WatchDirResponse]) error {
	w, err := s.openWatch(ctx, req.Header(), req.Msg.GetPath(), req.Msg.GetRecursive(), req.Msg.GetIncludeEntry())
	if err != nil {
		return err
	}
	defer w.st.Close()
	if err := out.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Start{Start: &pb.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	keepalive := keepaliveOf(req.Header())
	idle := func(ctx context.Context) (functions.Event, error) { return nextOrIdle(ctx, w.st, keepalive) }
	for {
		evs, err := w.next(ctx, idle)
		switch {
		case errors.Is(err, errIdle):
			err = out.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Keepalive{Keepalive: &pb.WatchDirResponse_KeepAlive{}}})
		case errors.Is(err, io.EOF):
			return nil
		}
		for _, ev := range evs {
			if err == nil {
				err = out.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Filesystem{Filesystem: ev}})
			}
		}
		if err != nil {
			abortIfGone(err)
			return connectError(err)
		}
	}
}
