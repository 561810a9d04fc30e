package alertsvc

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// events lists the fake's events, as the core's event log would.
type events struct{ sbs *sandboxtest.Sandboxes }

func (e events) ListEvents(_ context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	out := api.EventsResponse{Events: []api.EventRecord{}}
	sb := e.sbs.Sandbox(req.SandboxID)
	if sb == nil {
		return out, nil
	}
	for _, ev := range e.sbs.Snapshot(sb).Events {
		if req.Type == "" || ev.Type == req.Type {
			data, _ := json.Marshal(ev.Data)
			out.Events = append(out.Events, api.EventRecord{Type: ev.Type, SandboxID: sb.ID, Data: data})
		}
	}
	return out, nil
}

func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestAlertFiresOnceAndActs(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	sb := sbs.Add("ann")
	sb.Stats = runtime.Stats{Pids: 1}
	done := make(chan struct{})
	defer close(done)
	s := New(&sbs, events{&sbs}, done, slog.New(slog.DiscardHandler))
	ctx := auth.WithOwner(context.Background(), "ann")
	id := sb.ID
	state := func() sandbox.State { return sbs.Snapshot(sb).State }
	// pids above 0.5 holds at once.
	a, err := s.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertPids, Threshold: 0.5, Action: api.AlertPause})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.checkOnce(now)
	testutil.Eventually(t, 30*time.Second, func() bool { return state() == sandbox.Paused }, "the alert pauses the sandbox")
	list, _ := s.ListAlerts(ctx, api.AlertListRequest{SandboxID: id})
	if len(list.Alerts) != 1 || !list.Alerts[0].Firing {
		t.Errorf("alerts %+v", list.Alerts)
	}
	sbs.SetState(sb, sandbox.Running)
	s.checkOnce(now.Add(time.Second)) // still above: it does not fire again
	h, err := s.AlertHistory(ctx, api.AlertListRequest{SandboxID: id})
	if err != nil || len(h.Events) != 1 {
		t.Fatalf("history %+v %v", h, err)
	}
	if st := state(); st != sandbox.Running {
		t.Errorf("an alert that had fired acted again: %s", st)
	}

	// for_secs: it fires once the condition held that long.
	slow, err := s.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertPids, Threshold: 0.5, ForSecs: 60, Action: api.AlertStop})
	if err != nil {
		t.Fatal(err)
	}
	s.checkOnce(now.Add(2 * time.Second))
	s.checkOnce(now.Add(30 * time.Second))
	if len(sbs.Snapshot(sb).Ends) != 0 {
		t.Fatal("an alert fired before for_secs")
	}
	s.checkOnce(now.Add(63 * time.Second))
	if ends := sbs.Snapshot(sb).Ends; len(ends) != 1 || ends[0].Cause != runtime.CauseAlert {
		t.Fatalf("the stop alert ended the sandbox with %+v", ends)
	}

	sbs.SetState(sb, sandbox.Running)
	for name, req := range map[string]api.AlertCreateRequest{
		"metric":    {SandboxID: id, Metric: "network", Threshold: 1},
		"threshold": {SandboxID: id, Metric: api.AlertCPU},
		"action":    {SandboxID: id, Metric: api.AlertCPU, Threshold: 1, Action: "reboot"},
		"for_secs":  {SandboxID: id, Metric: api.AlertCPU, Threshold: 1, ForSecs: 1 << 40},
	} {
		if _, err := s.CreateAlert(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
	mallory := auth.WithOwner(context.Background(), "mallory")
	_, err = s.CreateAlert(mallory, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertCPU, Threshold: 1})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = s.DeleteAlert(mallory, api.AlertRequest{AlertID: a.AlertID})
	wantCode(t, err, errdefs.CodeMalformed)
	if list, _ := s.ListAlerts(mallory, api.AlertListRequest{}); len(list.Alerts) != 0 {
		t.Errorf("another owner's alerts are listed: %+v", list.Alerts)
	}
	sbs.SetState(sb, sandbox.Stopped)
	_, err = s.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertCPU, Threshold: 1})
	wantCode(t, err, errdefs.CodeStopped)
	s.checkOnce(now.Add(70 * time.Second)) // the sandbox ended: its alerts go
	if list, _ := s.ListAlerts(ctx, api.AlertListRequest{}); len(list.Alerts) != 0 {
		t.Errorf("alerts of a stopped sandbox remain: %+v (%s)", list.Alerts, slow.AlertID)
	}
	if n := sbs.Held(); n != 0 {
		t.Errorf("%d handles not released", n)
	}
}
