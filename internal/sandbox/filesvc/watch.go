package filesvc

// File watching: the agent follows a directory with inotify and streams
// its changes; the manager checks each event (the agent is hostile
// input) and emits it. A watch ends when its caller goes, when the
// directory is removed, or with S004 when the sandbox stops.

import (
	"context"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// watchKinds are the event types a watch passes on.
var watchKinds = []string{api.WatchCreate, api.WatchWrite, api.WatchRemove, api.WatchRename, api.WatchChmod, api.WatchOverflow}

// WatchFiles follows the changes under a directory (sandbox::fs::watch).
func (s *Service) WatchFiles(ctx context.Context, req api.FsWatchRequest, emit func(event string, data any) error) error {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return err
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return err
	}
	defer release()
	op := "watch of " + p
	callCtx, err := sb.AsUser(ctx, req.User)
	if err != nil {
		return err
	}
	w, err := sb.Agent().Watch(callCtx, &agentv1.FsWatchRequest{Path: p, Recursive: req.Recursive})
	if err != nil {
		return sb.FsFail(ctx, op, err)
	}
	defer w.Close()
	for {
		e, err := w.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return sb.FsFail(ctx, op, err)
		}
		if e.GetType() == "ready" {
			if err := emit(api.EventStreamOpen, struct{}{}); err != nil {
				return err
			}
			continue
		}
		ev, ok := watchEvent(p, e)
		if !ok {
			return sb.Fail(ctx, op, &agentclient.ProtocolError{What: "a watch event that is not one: " + spec.Clip(e.String(), 128)})
		}
		sb.Touch()
		if err := emit("change", ev); err != nil {
			return err
		}
	}
}

// watchEvent checks an agent's event: a known type, and paths inside the
// watched directory.
func watchEvent(root string, e *agentv1.FsWatchEvent) (api.FsWatchEvent, bool) {
	ev := api.FsWatchEvent{Type: e.GetType(), Path: e.GetPath(), OldPath: e.GetOldPath(), IsDir: e.GetIsDir()}
	if !slices.Contains(watchKinds, ev.Type) {
		return ev, false
	}
	if ev.Type == api.WatchOverflow {
		return api.FsWatchEvent{Type: ev.Type}, true
	}
	return ev, under(root, ev.Path) && (ev.OldPath == "" || under(root, ev.OldPath))
}

// under reports whether p is root or below it, a clean path of bounded
// length.
func under(root, p string) bool {
	if len(p) > maxPathBytes || path.Clean(p) != p || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
