package engineapi

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// feed is a fake event source: sandbox::events::stream emits its opening
// event, then what the test sends on events, and reports its end.
type feed struct {
	events chan api.EventRecord
	ended  chan api.EventsRequest
	opened chan api.EventsRequest
}

func newFeed() *feed {
	return &feed{events: make(chan api.EventRecord), ended: make(chan api.EventsRequest, 8), opened: make(chan api.EventsRequest, 8)}
}

func (f *feed) ListEvents(context.Context, api.EventsRequest) (api.EventsResponse, error) {
	return api.EventsResponse{}, nil
}

func (f *feed) PublishEvent(context.Context, api.PublishRequest) (api.EventRecord, error) {
	return api.EventRecord{}, nil
}

func (f *feed) StreamEvents(ctx context.Context, req api.EventsRequest, emit func(string, any, string) error) error {
	if req.Type == "bad type" {
		return errdefs.Malformed("type %q is not a pattern", req.Type)
	}
	f.opened <- req
	defer func() { f.ended <- req }()
	if err := emit(api.EventStreamOpen, map[string]any{}, ""); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-f.events:
			if err := emit(e.Type, e, e.ID); err != nil {
				return err
			}
		}
	}
}

// triggerServer serves the transport over a table whose events come from
// f.
func triggerServer(t *testing.T, f *feed) string {
	deps := functionstest.DepsOf(&functionstest.Fake{})
	deps.Events = f
	_, url := serveHandler(t, New(functions.New(deps), Options{}))
	return url
}

// register registers a sandbox::event trigger and returns its answer.
func register(wc *wsClient, id, typ string, config any) map[string]any {
	wc.t.Helper()
	wc.send(map[string]any{"type": "registertrigger", "id": id, "trigger_type": typ, "function_id": "app::on_event", "config": config})
	m := wc.recv()
	if m["type"] != "triggerregistrationresult" || m["id"] != id {
		wc.t.Fatalf("answer to registertrigger = %v", m)
	}
	return m
}

// TestTriggerDeliversEventsInOrder: a registered trigger calls the
// worker's function with each event, the next only once the worker has
// answered the previous one; unregistering ends its stream.
func TestTriggerDeliversEventsInOrder(t *testing.T) {
	f := newFeed()
	wc := dial(t, triggerServer(t, f))
	wc.send(map[string]any{"type": "registerfunction", "id": "app::on_event"})
	if m := register(wc, "t1", TriggerTypeEvent, map[string]any{"type": "sandbox.*"}); m["error"] != nil {
		t.Fatalf("registration refused: %v", m)
	}
	if req := <-f.opened; req.Type != "sandbox.*" {
		t.Fatalf("stream opened with %+v, want the trigger's config", req)
	}
	go func() {
		for _, id := range []string{"1", "2", "3"} {
			f.events <- api.EventRecord{ID: id, Type: "sandbox.created", SandboxID: "sb"}
		}
	}()
	for i, want := range []string{"1", "2", "3"} {
		m := wc.recv()
		data, _ := m["data"].(map[string]any)
		if m["type"] != "invokefunction" || m["function_id"] != "app::on_event" || data["id"] != want || data["type"] != "sandbox.created" {
			t.Fatalf("message %d = %v, want the invocation of event %s", i, m, want)
		}
		if i == 0 {
			// Nothing more comes before the worker answers.
			wc.alive()
			wc.send(map[string]any{"type": "invocationresult", "invocation_id": m["invocation_id"],
				"error": map[string]any{"code": "invocation_failed", "message": "handler threw"}})
			continue
		}
		wc.send(map[string]any{"type": "invocationresult", "invocation_id": m["invocation_id"], "result": nil})
	}
	wc.send(map[string]any{"type": "unregistertrigger", "id": "t1", "trigger_type": TriggerTypeEvent})
	select {
	case <-f.ended:
	case <-time.After(wait):
		t.Fatal("the trigger's stream did not end after unregistertrigger")
	}
	wc.alive()
}

// TestTriggerRegistrationRefused: an unknown trigger type, a config the
// event stream refuses and a trigger without a function are answered with
// an error; the session goes on.
func TestTriggerRegistrationRefused(t *testing.T) {
	wc := dial(t, triggerServer(t, newFeed()))
	for _, c := range []struct {
		typ    string
		config any
		code   string
	}{
		{"cron", map[string]any{}, codeTriggerTypeNotFound},
		{TriggerTypeEvent, map[string]any{"type": "bad type"}, codeTriggerFailed},
		{TriggerTypeEvent, map[string]any{"limit": "many"}, codeTriggerFailed},
	} {
		m := register(wc, "t", c.typ, c.config)
		if e, _ := m["error"].(map[string]any); e["code"] != c.code {
			t.Fatalf("registering %s %v = %v, want %s", c.typ, c.config, m, c.code)
		}
	}
	wc.send(map[string]any{"type": "registertrigger", "id": "t", "trigger_type": TriggerTypeEvent})
	if e, _ := wc.recv()["error"].(map[string]any); e["code"] != codeInvalidMessage {
		t.Fatalf("a trigger without a function: %v", e)
	}
	wc.alive()
}

// TestTriggerResumesAfterReattach: a worker that reconnects with its
// reattach token and registers its trigger again gets the events after
// the last one it answered.
func TestTriggerResumesAfterReattach(t *testing.T) {
	f := newFeed()
	url := triggerServer(t, f)
	wc := dial(t, url)
	register(wc, "t1", TriggerTypeEvent, nil)
	<-f.opened
	go func() { f.events <- api.EventRecord{ID: "7", Type: "exec.finished"} }()
	m := wc.recv()
	wc.send(map[string]any{"type": "invocationresult", "invocation_id": m["invocation_id"], "result": map[string]any{}})
	wc.alive()
	id, token := wc.hello["worker_id"], wc.hello["reattach_token"]
	wc.c.CloseNow()
	<-f.ended

	again := dial(t, url)
	again.send(map[string]any{"type": "reattach", "previous_worker_id": id, "reattach_token": token})
	if m := again.recv(); m["type"] != "workerregistered" || m["worker_id"] != id {
		t.Fatalf("reattach answer = %v", m)
	}
	register(again, "t1", TriggerTypeEvent, nil)
	if req := <-f.opened; req.After != "7" {
		t.Fatalf("the reattached trigger opened after %q, want 7", req.After)
	}
}

// TestIntrospection: the engine's own functions describe the table, the
// caller's workers (with what they registered) and the trigger types; a
// worker's log call is taken.
func TestIntrospection(t *testing.T) {
	wc := dial(t, triggerServer(t, newFeed()))
	wc.send(map[string]any{"type": "registerfunction", "id": "app::hello"})
	if m := wc.call("r", "engine::workers::register", map[string]any{"name": "tester", "runtime": "node", "pid": 7}); m["error"] != nil {
		t.Fatal(m)
	}
	var workers struct {
		Workers []workerView `json:"workers"`
	}
	decodeResult(t, wc.call("w", "engine::workers::list", map[string]any{}), &workers)
	if len(workers.Workers) != 1 || workers.Workers[0].Name != "tester" || workers.Workers[0].PID != 7 || len(workers.Workers[0].Functions) != 1 || workers.Workers[0].Functions[0] != "app::hello" {
		t.Fatalf("workers %+v", workers)
	}
	var fns api.FunctionsResponse
	decodeResult(t, wc.call("f", api.FnFunctionsInfo, map[string]any{"function_ids": []string{api.FnEventsStream}}), &fns)
	if len(fns.Functions) != 1 || len(fns.Functions[0].RequestFormat) == 0 {
		t.Fatalf("functions::info %+v", fns)
	}
	var triggers struct {
		Triggers []triggerTypeView `json:"triggers"`
	}
	decodeResult(t, wc.call("t", "engine::triggers::list", map[string]any{}), &triggers)
	if len(triggers.Triggers) != 1 || triggers.Triggers[0].ID != TriggerTypeEvent || len(triggers.Triggers[0].TriggerRequestFormat) == 0 {
		t.Fatalf("triggers %+v", triggers)
	}
	if m := wc.call("l", "engine::log::warn", map[string]any{"message": "hello\x1b[2J", "data": map[string]any{"n": 1}}); m["error"] != nil {
		t.Fatalf("log: %v", m)
	}
	if m := wc.call("i", "engine::workers::info", map[string]any{"worker_id": "nope"}); m["error"] == nil {
		t.Fatal("an unknown worker was described")
	}
}
