package sandbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// logged is what the manager recorded about sandbox id in its event log,
// of type typ (a pattern; "" any), oldest first, whatever the owner.
func logged(t *testing.T, m *Manager, id, typ string) []events.Event {
	t.Helper()
	evs, _ := m.events.List(events.Filter{AllOwners: true, SandboxID: id, Type: typ}, 1000)
	return evs
}

// TestEventsOfABackgroundProcess: starting a background process and its
// exit are events, the exit with its code.
func TestEventsOfABackgroundProcess(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	st, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "job", Argv: []string{"sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	var exited []events.Event
	testutil.Eventually(t, 30*time.Second, func() bool {
		exited = logged(t, m, id, "process.*")
		return len(exited) == 2
	}, "process.exited is recorded")
	var started, ended struct {
		Pid      int
		Tag      string
		ExitCode int `json:"exit_code"`
	}
	if exited[0].Type != api.EventProcessStarted || json.Unmarshal(exited[0].Data, &started) != nil || started.Pid != st.Pid || started.Tag != "job" {
		t.Errorf("first event %+v %s, want process.started of pid %d", exited[0], exited[0].Data, st.Pid)
	}
	if exited[1].Type != api.EventProcessExited || json.Unmarshal(exited[1].Data, &ended) != nil || ended.Pid != st.Pid || ended.ExitCode != 3 {
		t.Errorf("second event %+v %s, want process.exited with code 3", exited[1], exited[1].Data)
	}
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
