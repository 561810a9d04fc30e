package clusterapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/kubenode"
)

// oneNodeEvents is a node's event service holding events.
type oneNodeEvents struct {
	events []api.EventRecord
	mu     sync.Mutex
	after  []string // the afters asked
}

func (o *oneNodeEvents) ListEvents(_ context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	o.mu.Lock()
	o.after = append(o.after, req.After)
	o.mu.Unlock()
	out := api.EventsResponse{Events: []api.EventRecord{}}
	for _, e := range o.events {
		if req.After == "" || e.ID > req.After {
			out.Events = append(out.Events, e)
		}
	}
	return out, nil
}

func (o *oneNodeEvents) StreamEvents(ctx context.Context, req api.EventsRequest, emit func(string, any, string) error) error {
	if err := emit(api.EventStreamOpen, map[string]any{"after": "0"}, ""); err != nil {
		return err
	}
	for _, e := range o.events {
		if err := emit(e.Type, e, e.ID); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (o *oneNodeEvents) PublishEvent(context.Context, api.PublishRequest) (api.EventRecord, error) {
	return api.EventRecord{}, nil
}

// The owner's events of two nodes, listed and streamed as one, each with
// its node, ids a cursor over both.
func TestEventsOfEveryNode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
	local := &oneNodeEvents{events: []api.EventRecord{{ID: "1", Time: at(0), Type: "sandbox.created"}, {ID: "2", Time: at(2), Type: "sandbox.stopped"}}}
	remote := &oneNodeEvents{events: []api.EventRecord{{ID: "7", Time: at(1), Type: "sandbox.created"}}}
	cfg := config.Default()
	cfg.Cluster.PeerToken = "peer-token-0123456789abcdef"
	// Node B's API: the event functions of remote, for the owner the
	// call carries.
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderToken) != cfg.Cluster.PeerToken || r.Header.Get(HeaderOwner) != "alice" {
			http.Error(w, "not a node's call", http.StatusForbidden)
			return
		}
		var req api.EventsRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/v1/functions/" + api.FnEventsList:
			res, _ := remote.ListEvents(r.Context(), req)
			_ = json.NewEncoder(w).Encode(res)
		case "/v1/functions/" + api.FnEventsStream:
			w.Header().Set("Content-Type", "application/x-ndjson")
			_ = remote.StreamEvents(r.Context(), req, func(typ string, data any, _ string) error {
				b, _ := json.Marshal(map[string]any{"type": typ, "data": data})
				_, err := fmt.Fprintf(w, "%s\n", b)
				w.(http.Flusher).Flush()
				return err
			})
		}
	}))
	defer peer.Close()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b",
		Labels: map[string]string{kubenode.LabelNode: "true"}, Annotations: map[string]string{kubenode.AnnotationAPIURL: peer.URL}}})
	a := New(Options{Config: cfg})
	a.Attach(client, "node-a")
	ev := a.Events(local)
	ctx := auth.WithOwner(context.Background(), "alice")

	res, err := ev.ListEvents(ctx, api.EventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []api.EventRecord{
		{ID: "node-a=1", Node: "node-a", Type: "sandbox.created"},
		{ID: "node-a=1,node-b=7", Node: "node-b", Type: "sandbox.created"},
		{ID: "node-a=2,node-b=7", Node: "node-a", Type: "sandbox.stopped"},
	}
	if len(res.Events) != len(want) {
		t.Fatalf("merged listing %+v", res.Events)
	}
	for i, w := range want {
		if g := res.Events[i]; g.ID != w.ID || g.Node != w.Node || g.Type != w.Type {
			t.Errorf("event %d: %+v, want %+v", i, g, w)
		}
	}
	// A cursor gives each node its own place.
	if _, err := ev.ListEvents(ctx, api.EventsRequest{After: "node-a=1,node-b=7"}); err != nil {
		t.Fatal(err)
	}
	if l, r := local.after[len(local.after)-1], remote.after[len(remote.after)-1]; l != "1" || r != "7" {
		t.Fatalf("the cursor's places: local %q, remote %q", l, r)
	}
	// A page of 2 says where the next starts.
	page, err := ev.ListEvents(ctx, api.EventsRequest{Limit: 2})
	if err != nil || len(page.Events) != 2 || page.Next != "node-a=1,node-b=7" {
		t.Fatalf("a page of 2: %+v %v", page, err)
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var open string
	nodes := map[string]string{}
	err = ev.StreamEvents(sctx, api.EventsRequest{}, func(typ string, data any, id string) error {
		if typ == api.EventStreamOpen {
			open = data.(map[string]any)["after"].(string)
			return nil
		}
		rec := data.(api.EventRecord)
		if rec.ID != id {
			t.Errorf("event id %q, record's %q", id, rec.ID)
		}
		nodes[rec.Type+"@"+rec.Node] = id
		if len(nodes) == 3 {
			cancel()
		}
		return nil
	})
	if open != "node-a=0,node-b=0" || len(nodes) != 3 || nodes["sandbox.created@node-b"] == "" || nodes["sandbox.stopped@node-a"] == "" {
		t.Fatalf("merged stream: open %q, events %v, %v", open, nodes, err)
	}
}
