package envd

// The polled watchers of CreateWatcher, GetWatcherEvents and
// RemoveWatcher: each a sandbox::fs::watch that a goroutine drains into a
// bounded queue. A watcher belongs to its owner and sandbox; one that is
// not polled for watcherIdle goes away, and so does one whose watch ends.

import (
	"context"
	"errors"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/filesystem"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Bounds of the polled watchers.
const (
	maxWatchers         = 1024 // in all
	maxWatchersPerOwner = 64
	// maxWatcherEvents is how many events a watcher holds between polls;
	// later ones are dropped until it is polled.
	maxWatcherEvents = 1000
	// watcherIdle is how long a watcher lives without being polled.
	watcherIdle = 5 * time.Minute
)

// watchers is the set of polled watchers.
type watchers struct {
	// mu guards byID.
	mu   sync.Mutex
	byID map[string]*watcher
}

func newWatchers() *watchers { return &watchers{byID: map[string]*watcher{}} }

// watcher is one polled watcher.
type watcher struct {
	owner, sandbox string
	cancel         context.CancelFunc
	expiry         *time.Timer

	// mu guards events and ended.
	mu     sync.Mutex
	events []*pb.FilesystemEvent
	ended  bool
}

// CreateWatcher starts a polled watch of a directory.
func (s *filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[pb.CreateWatcherRequest]) (*connect.Response[pb.CreateWatcherResponse], error) {
	owner := auth.OwnerFrom(ctx)
	if err := s.watchers.room(owner); err != nil {
		return nil, err
	}
	// The watch outlives this request: it keeps the owner, not the deadline.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := s.openWatch(wctx, req.Header(), req.Msg.GetPath(), req.Msg.GetRecursive(), req.Msg.GetIncludeEntry())
	if err != nil {
		cancel()
		return nil, err
	}
	id := uuid.NewString()
	wt := &watcher{owner: owner, sandbox: w.sc.sandbox, cancel: cancel}
	wt.expiry = time.AfterFunc(watcherIdle, func() { s.watchers.remove(id) })
	if err := s.watchers.add(id, wt); err != nil {
		wt.expiry.Stop()
		cancel()
		w.st.Close()
		return nil, err
	}
	go wt.drain(wctx, w)
	return connect.NewResponse(&pb.CreateWatcherResponse{WatcherId: id}), nil
}

// GetWatcherEvents takes the events a watcher holds. A watcher whose watch
// ended answers what it still held, then NotFound.
func (s *filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[pb.GetWatcherEventsRequest]) (*connect.Response[pb.GetWatcherEventsResponse], error) {
	id := req.Msg.GetWatcherId()
	w, err := s.watchers.get(ctx, req.Header().Get(api.HeaderE2BSandboxID), id)
	if err != nil {
		return nil, err
	}
	w.expiry.Reset(watcherIdle)
	w.mu.Lock()
	events, ended := w.events, w.ended
	w.events = nil
	w.mu.Unlock()
	if ended && len(events) == 0 {
		s.watchers.remove(id)
		return nil, notFound("watcher %s has ended: its directory or sandbox is gone", id)
	}
	return connect.NewResponse(&pb.GetWatcherEventsResponse{Events: events}), nil
}

// RemoveWatcher stops a watcher.
func (s *filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[pb.RemoveWatcherRequest]) (*connect.Response[pb.RemoveWatcherResponse], error) {
	id := req.Msg.GetWatcherId()
	if _, err := s.watchers.get(ctx, req.Header().Get(api.HeaderE2BSandboxID), id); err != nil {
		return nil, err
	}
	s.watchers.remove(id)
	return connect.NewResponse(&pb.RemoveWatcherResponse{}), nil
}

// drain queues w's events until the watch ends or the watcher is removed.
func (wt *watcher) drain(ctx context.Context, w *watch) {
	defer w.st.Close()
	next := func(ctx context.Context) (functions.Event, error) { return w.st.Next(ctx) }
	for {
		evs, err := w.next(ctx, next)
		wt.mu.Lock()
		if err != nil {
			wt.ended = true
			wt.mu.Unlock()
			return
		}
		for _, ev := range evs {
			if len(wt.events) < maxWatcherEvents {
				wt.events = append(wt.events, ev)
			}
		}
		wt.mu.Unlock()
	}
}

// room refuses a new watcher when there are too many.
func (ws *watchers) room(owner string) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.roomLocked(owner)
}

func (ws *watchers) roomLocked(owner string) error {
	if len(ws.byID) >= maxWatchers {
		return connect.NewError(connect.CodeResourceExhausted, errors.New("too many watchers: remove some"))
	}
	n := 0
	for _, w := range ws.byID {
		if w.owner == owner {
			n++
		}
	}
	if n >= maxWatchersPerOwner {
		return connect.NewError(connect.CodeResourceExhausted, errorf("%d watchers already: remove some", n))
	}
	return nil
}

// add adds w as id, if there is room.
func (ws *watchers) add(id string, w *watcher) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := ws.roomLocked(w.owner); err != nil {
		return err
	}
	ws.byID[id] = w
	return nil
}

// get is watcher id, when it is the caller's and of the sandbox.
func (ws *watchers) get(ctx context.Context, sandbox, id string) (*watcher, error) {
	ws.mu.Lock()
	w, ok := ws.byID[id]
	ws.mu.Unlock()
	if !ok || w.owner != auth.OwnerFrom(ctx) || w.sandbox != sandbox {
		return nil, notFound("no watcher %q", id)
	}
	return w, nil
}

// remove stops and forgets watcher id; it is idempotent.
func (ws *watchers) remove(id string) {
	ws.mu.Lock()
	w, ok := ws.byID[id]
	delete(ws.byID, id)
	ws.mu.Unlock()
	if ok {
		w.cancel()
		w.expiry.Stop()
	}
}
