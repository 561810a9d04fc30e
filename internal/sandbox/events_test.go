package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestEventsRecordALifeForItsOwner(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	if err := exec(m, id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pause(ctx, api.PauseRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(ctx, api.ResumeRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	list, err := m.ListEvents(ctx, api.EventsRequest{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range list.Events {
		types = append(types, e.Type)
	}
	want := []string{api.EventSandboxCreated, api.EventSandboxReady, api.EventExecStarted, api.EventExecFinished,
		api.EventSandboxPaused, api.EventSandboxResumed, api.EventSandboxStopped}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
	var stopped struct{ Cause string }
	if err := json.Unmarshal(list.Events[6].Data, &stopped); err != nil || stopped.Cause != "request" {
		t.Errorf("the stop event says %s", list.Events[6].Data)
	}
	if other, _ := m.ListEvents(as("mallory"), api.EventsRequest{}); len(other.Events) != 0 {
		t.Errorf("another owner lists %+v", other.Events)
	}
	_, err = m.PublishEvent(as("mallory"), api.PublishRequest{Topic: "x", SandboxID: id})
	wantCode(t, err, errdefs.CodeNotFound)
	for name, req := range map[string]api.EventsRequest{
		"type":  {Type: "a b"},
		"since": {Since: "yesterday"},
		"after": {After: "-1"},
		"limit": {Limit: 5000},
		"id":    {SandboxID: "nope"},
	} {
		if _, err := m.ListEvents(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
}
