package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestAlertFiresOnceAndActs(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	// The in-process runtime reports 1 task: pids above 0.5 holds at once.
	a, err := m.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertPids, Threshold: 0.5, Action: api.AlertPause})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m.checkAlertsOnce(now)
	testutil.Eventually(t, 30*time.Second, func() bool { return state(t, m, id).State == "paused" }, "the alert pauses the sandbox")
	list, _ := m.ListAlerts(ctx, api.AlertListRequest{SandboxID: id})
	if len(list.Alerts) != 1 || !list.Alerts[0].Firing {
		t.Errorf("alerts %+v", list.Alerts)
	}
	if _, err := m.Resume(ctx, api.ResumeRequest{SandboxID: id}); err != nil {
		t.Fatal(err)
	}
	m.checkAlertsOnce(now.Add(time.Second)) // still above: it does not fire again
	h, err := m.AlertHistory(ctx, api.AlertListRequest{SandboxID: id})
	if err != nil || len(h.Events) != 1 {
		t.Fatalf("history %+v %v", h, err)
	}
	if info := state(t, m, id); info.State != "running" {
		t.Errorf("an alert that had fired acted again: %s", info.State)
	}

	// for_secs: it fires once the condition held that long.
	slow, err := m.CreateAlert(ctx, api.AlertCreateRequest{SandboxID: id, Metric: api.AlertPids, Threshold: 0.5, ForSecs: 60, Action: api.AlertStop})
	if err != nil {
		t.Fatal(err)
	}
	m.checkAlertsOnce(now.Add(2 * time.Second))
	m.checkAlertsOnce(now.Add(30 * time.Second))
	if info := state(t, m, id); info.Stopped {
		t.Fatal("an alert fired before for_secs")
	}
	m.checkAlertsOnce(now.Add(63 * time.Second))
	stoppedWith(t, m, id, "alert", "")

	for name, req := range map[string]api.AlertCreateRequest{
		"metric":    {SandboxID: id, Metric: "network", Threshold: 1},
		"threshold": {SandboxID: id, Metric: api.AlertCPU},
		"action":    {SandboxID: id, Metric: api.AlertCPU, Threshold: 1, Action: "reboot"},
		"for_secs":  {SandboxID: id, Metric: api.AlertCPU, Threshold: 1, ForSecs: 1 << 40},
	} {
		if _, err := m.CreateAlert(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
	_, err = m.CreateAlert(as("mallory"), api.AlertCreateRequest{SandboxID: id, Metric: api.AlertCPU, Threshold: 1})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = m.DeleteAlert(as("mallory"), api.AlertRequest{AlertID: a.AlertID})
	wantCode(t, err, errdefs.CodeMalformed)
	m.checkAlertsOnce(now.Add(70 * time.Second)) // the sandbox ended: its alerts go
	if list, _ := m.ListAlerts(ctx, api.AlertListRequest{}); len(list.Alerts) != 0 {
		t.Errorf("alerts of a stopped sandbox remain: %+v (%s)", list.Alerts, slow.AlertID)
	}
}
