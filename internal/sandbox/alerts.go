package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Alerts: a condition on a sandbox's resource use, checked every
// alertInterval from its cgroups; held for for_secs, it fires once (an
// alert.fired event, and its action), and is armed again once the
// condition clears. Alerts live and die with their sandbox.

// alertInterval is how often alerts are checked.
const alertInterval = time.Second

// Bounds on alerts.
const (
	maxAlertsPerSandbox = 16
	maxAlertForSecs     = 24 * 3600
)

// alert is one alert and what the checker knows of its condition.
type alert struct {
	info  api.AlertInfo
	owner string
	// above is when the condition began to hold; zero while it does not.
	above time.Time
	// lastCPU and lastAt are the previous CPU reading, for the cpu metric.
	lastCPU float64
	lastAt  time.Time
}

// alerts holds the manager's alerts and runs their checker.
type alerts struct {
	mu    sync.Mutex
	byID  map[string]*alert
	start sync.Once
}

// CreateAlert adds an alert to a sandbox (sandbox::alert::create).
func (m *Manager) CreateAlert(ctx context.Context, req api.AlertCreateRequest) (api.AlertInfo, error) {
	if !slices.Contains([]string{api.AlertCPU, api.AlertMemory, api.AlertPids, api.AlertDisk}, req.Metric) {
		return api.AlertInfo{}, errdefs.Malformed("metric must be %s, %s, %s or %s, got %q", api.AlertCPU, api.AlertMemory, api.AlertPids, api.AlertDisk, clip(req.Metric, 32))
	}
	if req.Action == "" {
		req.Action = api.AlertNotify
	}
	if !slices.Contains([]string{api.AlertNotify, api.AlertPause, api.AlertStop}, req.Action) {
		return api.AlertInfo{}, errdefs.Malformed("action must be %s, %s or %s, got %q", api.AlertNotify, api.AlertPause, api.AlertStop, clip(req.Action, 32))
	}
	if !(req.Threshold > 0) || req.Threshold > 1e12 {
		return api.AlertInfo{}, errdefs.Malformed("threshold must be a positive number, got %v", req.Threshold)
	}
	if req.ForSecs > maxAlertForSecs {
		return api.AlertInfo{}, errdefs.Malformed("for_secs must be at most %d, got %d", maxAlertForSecs, req.ForSecs)
	}
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.AlertInfo{}, err
	}
	if st, end := sb.current(); st.ended() {
		return api.AlertInfo{}, stoppedError(sb.rec.ID, end)
	}
	a := &alert{info: api.AlertInfo{AlertID: uuid.NewString(), SandboxID: sb.rec.ID, Metric: req.Metric,
		Threshold: req.Threshold, ForSecs: req.ForSecs, Action: req.Action}, owner: sb.rec.Owner}
	m.alerts.mu.Lock()
	n := 0
	for _, other := range m.alerts.byID {
		if other.info.SandboxID == sb.rec.ID {
			n++
		}
	}
	if n >= maxAlertsPerSandbox {
		m.alerts.mu.Unlock()
		return api.AlertInfo{}, errdefs.New(errdefs.CodeCapacity, "sandbox %s has %d alerts already; at most %d", sb.rec.ID, n, maxAlertsPerSandbox)
	}
	if m.alerts.byID == nil {
		m.alerts.byID = map[string]*alert{}
	}
	m.alerts.byID[a.info.AlertID] = a
	m.alerts.mu.Unlock()
	m.alerts.start.Do(func() { go m.checkAlerts() })
	return a.info, nil
}

// ListAlerts lists the caller's alerts, of one sandbox or all.
func (m *Manager) ListAlerts(ctx context.Context, req api.AlertListRequest) (api.AlertListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	m.alerts.mu.Lock()
	out := api.AlertListResponse{Alerts: []api.AlertInfo{}}
	for _, a := range m.alerts.byID {
		if a.owner == owner && (req.SandboxID == "" || a.info.SandboxID == req.SandboxID) {
			out.Alerts = append(out.Alerts, a.info)
		}
	}
	m.alerts.mu.Unlock()
	sort.Slice(out.Alerts, func(i, j int) bool { return out.Alerts[i].AlertID < out.Alerts[j].AlertID })
	return out, nil
}

// DeleteAlert removes one of the caller's alerts (S001 unknown).
func (m *Manager) DeleteAlert(ctx context.Context, req api.AlertRequest) (api.AlertDeleteResponse, error) {
	m.alerts.mu.Lock()
	defer m.alerts.mu.Unlock()
	a, ok := m.alerts.byID[req.AlertID]
	if !ok || a.owner != auth.OwnerFrom(ctx) {
		return api.AlertDeleteResponse{}, errdefs.Malformed("no alert %q", clip(req.AlertID, 64))
	}
	delete(m.alerts.byID, req.AlertID)
	return api.AlertDeleteResponse{AlertID: req.AlertID, Deleted: true}, nil
}

// AlertHistory lists the alerts that fired: the alert.fired events.
func (m *Manager) AlertHistory(ctx context.Context, req api.AlertListRequest) (api.EventsResponse, error) {
	return m.ListEvents(ctx, api.EventsRequest{SandboxID: req.SandboxID, Type: api.EventAlertFired})
}

// checkAlerts checks every alert each alertInterval until the daemon
// shuts down.
func (m *Manager) checkAlerts() {
	t := time.NewTicker(alertInterval)
	defer t.Stop()
	for {
		select {
		case <-m.shutdown.Done():
			return
		case now := <-t.C:
			m.checkAlertsOnce(now)
		}
	}
}

// checkAlertsOnce reads each alerted sandbox's use once and fires what
// held long enough; alerts of sandboxes that ended are dropped.
func (m *Manager) checkAlertsOnce(now time.Time) {
	m.alerts.mu.Lock()
	var live []*alert
	for id, a := range m.alerts.byID {
		m.mu.Lock()
		sb, ok := m.sandboxes[a.info.SandboxID]
		m.mu.Unlock()
		if !ok || sb.isStopped() {
			delete(m.alerts.byID, id)
			continue
		}
		live = append(live, a)
	}
	m.alerts.mu.Unlock()
	for _, a := range live {
		m.checkAlert(a, now)
	}
}

// checkAlert checks one alert.
func (m *Manager) checkAlert(a *alert, now time.Time) {
	m.mu.Lock()
	sb := m.sandboxes[a.info.SandboxID]
	m.mu.Unlock()
	if sb == nil {
		return
	}
	if st, _ := sb.current(); st != Running {
		return // a paused sandbox uses nothing; its time above does not run
	}
	st, err := m.stats(sb)
	if err != nil {
		return
	}
	m.alerts.mu.Lock()
	defer m.alerts.mu.Unlock()
	var value float64
	switch a.info.Metric {
	case api.AlertMemory:
		value = float64(st.MemoryBytes) / (1 << 20)
	case api.AlertPids:
		value = float64(st.Pids)
	case api.AlertDisk:
		value = float64(st.DiskBytes) / (1 << 20)
	case api.AlertCPU:
		if !a.lastAt.IsZero() {
			value = (st.CPUSeconds - a.lastCPU) / now.Sub(a.lastAt).Seconds() * 100
		}
		a.lastCPU, a.lastAt = st.CPUSeconds, now
	}
	if value <= a.info.Threshold {
		a.above, a.info.Firing = time.Time{}, false
		return
	}
	if a.above.IsZero() {
		a.above = now
	}
	if a.info.Firing || now.Sub(a.above) < time.Duration(a.info.ForSecs)*time.Second {
		return
	}
	a.info.Firing = true
	m.fire(sb, a.info, value)
}

// fire records that alert info fired at value and applies its action.
func (m *Manager) fire(sb *sandbox, info api.AlertInfo, value float64) {
	m.log.Info("alert fired", "sandbox", sb.rec.ID, "alert", info.AlertID, "metric", info.Metric, "value", value, "action", info.Action)
	m.emitFor(sb, api.EventAlertFired, map[string]any{"alert_id": info.AlertID, "metric": info.Metric, "value": value,
		"threshold": info.Threshold, "for_secs": info.ForSecs, "action": info.Action})
	switch info.Action {
	case api.AlertPause:
		go func() {
			if _, err := m.freeze(sb); err != nil {
				m.log.Warn("pausing a sandbox for an alert", "sandbox", sb.rec.ID, "err", err)
			}
		}()
	case api.AlertStop:
		m.stopAsync(sb, runtime.End{Cause: runtime.CauseAlert, Detail: fmt.Sprintf("alert %s: %s %.0f above %.0f for %d s", info.AlertID, info.Metric, value, info.Threshold, info.ForSecs)})
	}
}
