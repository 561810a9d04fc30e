package eventsvc

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
)

const (
	aliceBox = "00000000-0000-4000-8000-00000000a11c"
	bobBox   = "00000000-0000-4000-8000-000000000b0b"
)

// owners is a fake of the core's Get: each sandbox has one owner.
type owners map[string]string

func (o owners) Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error) {
	if owner, ok := o[req.SandboxID]; !ok || owner != auth.OwnerFrom(ctx) {
		return api.SandboxInfo{}, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", req.SandboxID)
	}
	return api.SandboxInfo{SandboxID: req.SandboxID}, nil
}

func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

// service is the event service over a fresh log, with alice's and bob's
// sandboxes; the log holds what the core recorded of each.
func service(t *testing.T) (*Service, *events.Log) {
	t.Helper()
	log, err := events.Open(filepath.Join(t.TempDir(), "events.db"), events.Options{MaxCount: 1000, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	for _, e := range []events.Event{
		{Type: api.EventSandboxCreated, Owner: "alice", SandboxID: aliceBox},
		{Type: api.EventSandboxCreated, Owner: "bob", SandboxID: bobBox},
		{Type: api.EventExecStarted, Owner: "alice", SandboxID: aliceBox},
		{Type: api.EventExecFinished, Owner: "alice", SandboxID: aliceBox},
	} {
		log.Append(e)
	}
	return New(owners{aliceBox: "alice", bobBox: "bob"}, log), log
}

func types(evs []api.EventRecord) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestListIsTheCallersOwn(t *testing.T) {
	s, _ := service(t)
	ctx := as("alice")
	all, err := s.ListEvents(ctx, api.EventsRequest{})
	if err != nil || types(all.Events) != "sandbox.created exec.started exec.finished" || all.Next != "" {
		t.Fatalf("alice's events: %q next %q, %v", types(all.Events), all.Next, err)
	}
	if execs, _ := s.ListEvents(ctx, api.EventsRequest{SandboxID: aliceBox, Type: "exec.*"}); types(execs.Events) != "exec.started exec.finished" {
		t.Errorf("alice's exec.*: %q", types(execs.Events))
	}
	if other, _ := s.ListEvents(as("mallory"), api.EventsRequest{}); len(other.Events) != 0 {
		t.Errorf("another owner lists %+v", other.Events)
	}
	if theirs, _ := s.ListEvents(ctx, api.EventsRequest{SandboxID: bobBox}); len(theirs.Events) != 0 {
		t.Errorf("alice lists bob's sandbox's events: %+v", theirs.Events)
	}
	// A page at a time: Next is the last id of the page, After resumes.
	page, err := s.ListEvents(ctx, api.EventsRequest{Limit: 2})
	if err != nil || len(page.Events) != 2 || page.Next != page.Events[1].ID {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	rest, err := s.ListEvents(ctx, api.EventsRequest{After: page.Next})
	if err != nil || types(rest.Events) != "exec.finished" {
		t.Errorf("after %s: %q, %v", page.Next, types(rest.Events), err)
	}
	for name, req := range map[string]api.EventsRequest{
		"type":  {Type: "a b"},
		"since": {Since: "yesterday"},
		"after": {After: "-1"},
		"limit": {Limit: 5000},
		"id":    {SandboxID: "nope"},
	} {
		if _, err := s.ListEvents(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
}

func TestPublish(t *testing.T) {
	s, _ := service(t)
	rec, err := s.PublishEvent(as("alice"), api.PublishRequest{Topic: "build.done", SandboxID: aliceBox, Data: json.RawMessage(`{"ok":true}`)})
	if err != nil || rec.Type != "custom.build.done" || rec.SandboxID != aliceBox || string(rec.Data) != `{"ok":true}` || rec.ID == "" {
		t.Fatalf("publish: %+v, %v", rec, err)
	}
	if list, _ := s.ListEvents(as("alice"), api.EventsRequest{Type: "custom.*"}); len(list.Events) != 1 || list.Events[0].ID != rec.ID {
		t.Errorf("alice's custom events: %+v", list.Events)
	}
	_, err = s.PublishEvent(as("mallory"), api.PublishRequest{Topic: "x", SandboxID: aliceBox})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = s.PublishEvent(as("alice"), api.PublishRequest{Topic: "Not A Topic"})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = s.PublishEvent(as("alice"), api.PublishRequest{Topic: "big", Data: json.RawMessage(`"` + strings.Repeat("x", maxPublishedBytes) + `"`)})
	wantCode(t, err, errdefs.CodeMalformed)
}

func TestStream(t *testing.T) {
	s, log := service(t)
	ctx, cancel := context.WithCancel(as("alice"))
	defer cancel()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- s.StreamEvents(ctx, api.EventsRequest{Type: "exec.*"}, func(event string, _ any, id string) error {
			got <- event + "#" + id
			return nil
		})
	}()
	want := func(prefix string) {
		t.Helper()
		select {
		case e := <-got:
			if !strings.HasPrefix(e, prefix) {
				t.Fatalf("streamed %q, want %s", e, prefix)
			}
		case err := <-done:
			t.Fatalf("the stream ended: %v", err)
		}
	}
	want(api.EventStreamOpen + "#")
	want(api.EventExecStarted + "#")
	want(api.EventExecFinished + "#")
	log.Append(events.Event{Type: api.EventExecStarted, Owner: "bob", SandboxID: bobBox})
	log.Append(events.Event{Type: api.EventSandboxStopped, Owner: "alice", SandboxID: aliceBox})
	e := log.Append(events.Event{Type: api.EventExecStarted, Owner: "alice", SandboxID: aliceBox})
	want(api.EventExecStarted + "#" + strconvID(e))
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("the stream ended with %v, want its context's end", err)
	}
}

func strconvID(e events.Event) string {
	b, _ := json.Marshal(e.ID)
	return string(b)
}

func TestWithoutALog(t *testing.T) {
	s := New(owners{}, nil)
	if list, err := s.ListEvents(as("alice"), api.EventsRequest{}); err != nil || len(list.Events) != 0 {
		t.Errorf("list: %+v, %v", list, err)
	}
	wantCode(t, s.StreamEvents(as("alice"), api.EventsRequest{}, func(string, any, string) error { return nil }), errdefs.CodeUnsupported)
	_, err := s.PublishEvent(as("alice"), api.PublishRequest{Topic: "x"})
	wantCode(t, err, errdefs.CodeUnsupported)
}
