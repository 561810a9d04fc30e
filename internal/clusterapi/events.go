package clusterapi

// sandbox::events::list and ::stream in cluster mode: the owner's events of
// every hutch node, in one listing or one stream, each event with the node
// that recorded it. A node's event ids are its own; a merged listing or
// stream's are cursors over every node ("node=id,node=id", the last event
// taken of each), which after, Last-Event-ID and next take back. A plain
// after (an id, "now") is every node's.

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// EventService is the daemon's event service (functions.Events).
type EventService interface {
	ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error)
	StreamEvents(ctx context.Context, req api.EventsRequest, emit func(event string, data any, id string) error) error
	PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error)
}

// Events is local, this node's event service, over the cluster: the
// events of the owner's sandboxes on every node, each with its node.
func (a *API) Events(local EventService) EventService { return &clusterEvents{a: a, local: local} }

type clusterEvents struct {
	a     *API
	local EventService
}

// merged says req is answered from every node: a caller's own call (not
// a node's, nor forwarded by one) for no one sandox (a sandbox's events
// are its holding node's, where the table forwards the call).
func (e *clusterEvents) merged(ctx context.Context, req api.EventsRequest) bool {
	client, _ := e.a.kube()
	return client != nil && req.SandboxID == "" && !kubenode.IsOnNode(ctx) && !fromPeer(ctx)
}

// self is this node's name ("" before it joined).
func (e *clusterEvents) self() string { _, n := e.a.kube(); return n }

func (e *clusterEvents) PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error) {
	rec, err := e.local.PublishEvent(ctx, req)
	rec.Node = e.self()
	return rec, err
}

func (e *clusterEvents) ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	self := e.self()
	if !e.merged(ctx, req) {
		res, err := e.local.ListEvents(ctx, req)
		for i := range res.Events {
			res.Events[i].Node = self
		}
		return res, err
	}
	cur, plain, err := parseCursor(req.After)
	if err != nil {
		return api.EventsResponse{}, err
	}
	peers, err := e.a.peers(ctx)
	if err != nil {
		return api.EventsResponse{}, err
	}
	// Each node's page after its place in the cursor.
	pages := make([]api.EventsResponse, 1+len(peers))
	nodes := []string{self}
	local := req
	local.After = cur.of(self, plain)
	if pages[0], err = e.local.ListEvents(ctx, local); err != nil {
		return api.EventsResponse{}, err
	}
	var wg sync.WaitGroup
	owner := auth.OwnerFrom(ctx)
	for i, p := range peers {
		nodes = append(nodes, p.name)
		r := req
		r.After = cur.of(p.name, plain)
		body, err := json.Marshal(r)
		if err != nil {
			return api.EventsResponse{}, err
		}
		wg.Go(func() {
			if err := e.a.peerCall(ctx, peerTimeout, p.url, owner, api.FnEventsList, body, &pages[1+i]); err != nil {
				e.a.o.Logger.Warn("listing a node's events", "node", p.name, "err", err)
			}
		})
	}
	wg.Wait()
	limit := req.Limit
	if limit == 0 {
		limit = 1000
	}
	// Merged by time, each node's in its own order.
	next := cursor{}
	for n, v := range cur {
		next[n] = v
	}
	at := make([]int, len(pages))
	out := api.EventsResponse{Events: []api.EventRecord{}}
	for len(out.Events) < limit {
		best := -1
		for i, pg := range pages {
			if at[i] < len(pg.Events) && (best < 0 || eventTime(pg.Events[at[i]]).Before(eventTime(pages[best].Events[at[best]]))) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		ev := pages[best].Events[at[best]]
		at[best]++
		next[nodes[best]] = ev.ID
		ev.Node, ev.ID = nodes[best], next.String()
		out.Events = append(out.Events, ev)
	}
	more := false
	for i, pg := range pages {
		more = more || pg.Next != "" || at[i] < len(pg.Events)
	}
	if more && len(out.Events) > 0 {
		out.Next = out.Events[len(out.Events)-1].ID
	}
	return out, nil
}

// eventTime is when ev was recorded.
func eventTime(ev api.EventRecord) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, ev.Time)
	return t
}

// source is one node's event stream in a merged one.
type source struct {
	node string
	// opened is told the node's resolved place (its open event's after),
	// or closed when the node's stream failed before it opened (err).
	opened chan string
	err    error
}

// item is one event of a node's stream, or its end (err).
type item struct {
	node string
	rec  api.EventRecord
	err  error
}

func (e *clusterEvents) StreamEvents(ctx context.Context, req api.EventsRequest, emit func(event string, data any, id string) error) error {
	self := e.self()
	if !e.merged(ctx, req) {
		return e.local.StreamEvents(ctx, req, func(event string, data any, id string) error {
			if rec, ok := data.(api.EventRecord); ok {
				rec.Node = self
				data = rec
			}
			return emit(event, data, id)
		})
	}
	cur, plain, err := parseCursor(req.After)
	if err != nil {
		return err
	}
	peers, err := e.a.peers(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	events := make(chan item)
	start := make(chan struct{})
	// run streams one node's events into events, once every node's
	// stream opened.
	run := func(src *source, stream func(on func(typ string, data json.RawMessage, rec any) error) error) {
		wg.Go(func() {
			opened := false
			err := stream(func(typ string, data json.RawMessage, rec any) error {
				if typ == api.EventStreamOpen {
					var open struct {
						After string `json:"after"`
					}
					_ = json.Unmarshal(data, &open)
					opened = true
					src.opened <- open.After
					select {
					case <-start:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				it := item{node: src.node}
				switch r := rec.(type) {
				case api.EventRecord:
					it.rec = r
				default:
					if err := json.Unmarshal(data, &it.rec); err != nil {
						return err
					}
				}
				select {
				case events <- it:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if !opened {
				src.err = err
				close(src.opened)
				return
			}
			if err == nil {
				err = errdefs.New(errdefs.CodeInternal, "node %s's event stream ended", src.node)
			}
			select {
			case events <- item{node: src.node, err: err}:
			case <-ctx.Done():
			}
		})
	}
	sources := []*source{{node: self, opened: make(chan string, 1)}}
	local := req
	local.After = cur.of(self, plain)
	run(sources[0], func(on func(string, json.RawMessage, any) error) error {
		return e.local.StreamEvents(ctx, local, func(event string, data any, _ string) error {
			if event == api.EventStreamOpen {
				raw, _ := json.Marshal(data)
				return on(event, raw, nil)
			}
			return on(event, nil, data)
		})
	})
	owner := auth.OwnerFrom(ctx)
	for _, p := range peers {
		r := req
		r.After = cur.of(p.name, plain)
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		src := &source{node: p.name, opened: make(chan string, 1)}
		sources = append(sources, src)
		run(src, func(on func(string, json.RawMessage, any) error) error {
			res, err := e.a.peerRequest(ctx, p.url, owner, api.FnEventsStream, body, "application/x-ndjson")
			if err != nil {
				return err
			}
			defer res.Body.Close()
			return readStream(res, nil, func(typ string, data json.RawMessage) error { return on(typ, data, nil) })
		})
	}
	// Every node's place first: the open event's cursor.
	next := cursor{}
	for _, src := range sources {
		select {
		case after, ok := <-src.opened:
			if ok {
				next[src.node] = after
				continue
			}
			if src.node == self {
				return src.err // the request's own fault
			}
			e.a.o.Logger.Warn("streaming a node's events", "node", src.node, "err", src.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	close(start)
	if err := emit(api.EventStreamOpen, map[string]any{"after": next.String()}, ""); err != nil {
		return err
	}
	for {
		select {
		case it := <-events:
			if it.err != nil {
				if it.node == self {
					return it.err
				}
				return errdefs.New(errdefs.CodeFSStreamAborted, "node %s's events stopped (%v); resume after the last event id received", it.node, it.err)
			}
			next[it.node] = it.rec.ID
			it.rec.Node, it.rec.ID = it.node, next.String()
			if err := emit(it.rec.Type, it.rec, it.rec.ID); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cursor is a merged listing's or stream's place in each node's events:
// the id of the last event taken, by node.
type cursor map[string]string

// maxCursor bounds a cursor's text.
const maxCursor = 16 << 10

var cursorPart = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]{0,252})=([0-9]{1,20})$`)

// parseCursor reads after: a cursor (node=id,...), or a plain after
// (an id, "now" or "") for every node.
func parseCursor(after string) (cursor, string, error) {
	if !strings.Contains(after, "=") {
		return nil, after, nil
	}
	if len(after) > maxCursor {
		return nil, "", errdefs.Malformed("after is a cursor of %d bytes; at most %d", len(after), maxCursor)
	}
	c := cursor{}
	for part := range strings.SplitSeq(after, ",") {
		m := cursorPart.FindStringSubmatch(part)
		if m == nil {
			return nil, "", errdefs.Malformed("after %q is not an event id or a cluster cursor (node=id,...)", spec.Clip(after, 64))
		}
		c[m[1]] = m[2]
	}
	return c, "", nil
}

// of is node's after: its place in c, or plain when c is not a cursor (a
// node c does not name starts from its first event).
func (c cursor) of(node, plain string) string {
	if c == nil {
		return plain
	}
	return c[node]
}

// String is c's text, its nodes in order.
func (c cursor) String() string {
	nodes := make([]string, 0, len(c))
	for n, id := range c {
		if id != "" {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n + "=" + c[n]
	}
	return strings.Join(parts, ",")
}
