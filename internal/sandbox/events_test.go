package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
)

// logged is what the manager recorded about sandbox id in its event log,
// of type typ (a pattern; "" any), oldest first, whatever the owner.
func logged(t *testing.T, m *Manager, id, typ string) []events.Event {
	t.Helper()
	evs, _ := m.events.List(events.Filter{AllOwners: true, SandboxID: id, Type: typ}, 1000)
	return evs
}

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
	list := logged(t, m, id, "")
	var types []string
	for _, e := range list {
		types = append(types, e.Type)
		if e.Owner != "" {
			t.Errorf("event %s recorded for owner %q, not the sandbox's", e.Type, e.Owner)
		}
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
	if err := json.Unmarshal(list[6].Data, &stopped); err != nil || stopped.Cause != "request" {
		t.Errorf("the stop event says %s", list[6].Data)
	}
}
