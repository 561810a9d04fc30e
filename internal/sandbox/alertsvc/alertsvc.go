// Package alertsvc is the alert service (sandbox::alert::*): a condition
// on a sandbox's resource use, checked every interval from its cgroups
// (Handle.Stats); held for for_secs, it fires once (an alert.fired event,
// and its action: Handle.Pause or Handle.Stop), and is armed again once
// the condition clears. Alerts live and die with their sandbox. It reaches
// a sandbox only through sandbox.Sandboxes.
package alertsvc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

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

// Events lists recorded events (eventsvc's sandbox::events::list): an
// alert's history is its alert.fired events.
type Events interface {
	ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error)
}

// Service holds the alerts and runs their checker (functions.Alerts).
type Service struct {
	sbs    sandbox.Sandboxes
	events Events
	// done is closed when the daemon shuts down, which ends the checker.
	done <-chan struct{}
	log  *slog.Logger

	mu    sync.Mutex
	byID  map[string]*alert
	start sync.Once
}

// New is the alert service over sbs and events; its checker, started
// with the first alert, ends once done is closed.
func New(sbs sandbox.Sandboxes, events Events, done <-chan struct{}, log *slog.Logger) *Service {
	return &Service{sbs: sbs, events: events, done: done, log: log}
}

// CreateAlert adds an alert to a sandbox (sandbox::alert::create).
func (s *Service) CreateAlert(ctx context.Context, req api.AlertCreateRequest) (api.AlertInfo, error) {
	if !slices.Contains([]string{api.AlertCPU, api.AlertMemory, api.AlertPids, api.AlertDisk}, req.Metric) {
		return api.AlertInfo{}, errdefs.Malformed("metric must be %s, %s, %s or %s, got %q", api.AlertCPU, api.AlertMemory, api.AlertPids, api.AlertDisk, spec.Clip(req.Metric, 32))
	}
	if req.Action == "" {
		req.Action = api.AlertNotify
	}
	if !slices.Contains([]string{api.AlertNotify, api.AlertPause, api.AlertStop}, req.Action) {
		return api.AlertInfo{}, errdefs.Malformed("action must be %s, %s or %s, got %q", api.AlertNotify, api.AlertPause, api.AlertStop, spec.Clip(req.Action, 32))
	}
	if !(req.Threshold > 0) || req.Threshold > 1e12 {
		return api.AlertInfo{}, errdefs.Malformed("threshold must be a positive number, got %v", req.Threshold)
	}
	if req.ForSecs > maxAlertForSecs {
		return api.AlertInfo{}, errdefs.Malformed("for_secs must be at most %d, got %d", maxAlertForSecs, req.ForSecs)
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseRecord)
	if err != nil {
		return api.AlertInfo{}, err
	}
	release()
	a := &alert{info: api.AlertInfo{AlertID: uuid.NewString(), SandboxID: sb.ID(), Metric: req.Metric,
		Threshold: req.Threshold, ForSecs: req.ForSecs, Action: req.Action}, owner: auth.OwnerFrom(ctx)}
	s.mu.Lock()
	n := 0
	for _, other := range s.byID {
		if other.info.SandboxID == sb.ID() {
			n++
		}
	}
	if n >= maxAlertsPerSandbox {
		s.mu.Unlock()
		return api.AlertInfo{}, errdefs.New(errdefs.CodeCapacity, "sandbox %s has %d alerts already; at most %d", sb.ID(), n, maxAlertsPerSandbox)
	}
	if s.byID == nil {
		s.byID = map[string]*alert{}
	}
	s.byID[a.info.AlertID] = a
	s.mu.Unlock()
	s.start.Do(func() { go s.check() })
	return a.info, nil
}

// ListAlerts lists the caller's alerts, of one sandbox or all.
func (s *Service) ListAlerts(ctx context.Context, req api.AlertListRequest) (api.AlertListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	s.mu.Lock()
	out := api.AlertListResponse{Alerts: []api.AlertInfo{}}
	for _, a := range s.byID {
		if a.owner == owner && (req.SandboxID == "" || a.info.SandboxID == req.SandboxID) {
			out.Alerts = append(out.Alerts, a.info)
		}
	}
	s.mu.Unlock()
	sort.Slice(out.Alerts, func(i, j int) bool { return out.Alerts[i].AlertID < out.Alerts[j].AlertID })
	return out, nil
}

// DeleteAlert removes one of the caller's alerts (S001 unknown).
func (s *Service) DeleteAlert(ctx context.Context, req api.AlertRequest) (api.AlertDeleteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[req.AlertID]
	if !ok || a.owner != auth.OwnerFrom(ctx) {
		return api.AlertDeleteResponse{}, errdefs.Malformed("no alert %q", spec.Clip(req.AlertID, 64))
	}
	delete(s.byID, req.AlertID)
	return api.AlertDeleteResponse{AlertID: req.AlertID, Deleted: true}, nil
}

// AlertHistory lists the alerts that fired: the alert.fired events.
func (s *Service) AlertHistory(ctx context.Context, req api.AlertListRequest) (api.EventsResponse, error) {
	return s.events.ListEvents(ctx, api.EventsRequest{SandboxID: req.SandboxID, Type: api.EventAlertFired})
}

// check checks every alert each alertInterval until the daemon shuts
// down.
func (s *Service) check() {
	t := time.NewTicker(alertInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.checkOnce(now)
		}
	}
}

// checkOnce reads each alerted sandbox's use once and fires what held
// long enough; alerts of sandboxes that ended are dropped.
func (s *Service) checkOnce(now time.Time) {
	s.mu.Lock()
	alerts := make([]*alert, 0, len(s.byID))
	for _, a := range s.byID {
		alerts = append(alerts, a)
	}
	s.mu.Unlock()
	for _, a := range alerts {
		sb, release, err := s.sbs.Acquire(auth.WithOwner(context.Background(), a.owner), a.info.SandboxID, sandbox.UseRecord)
		if err != nil { // ended, or gone
			s.mu.Lock()
			delete(s.byID, a.info.AlertID)
			s.mu.Unlock()
			continue
		}
		s.checkAlert(sb, a, now)
		release()
	}
}

// checkAlert checks one alert of sb.
func (s *Service) checkAlert(sb sandbox.Handle, a *alert, now time.Time) {
	if sb.State() != sandbox.Running {
		return // a paused sandbox uses nothing; its time above does not run
	}
	st, err := sb.Stats()
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.fire(sb, a.info, value)
}

// fire records that alert info fired at value and applies its action.
func (s *Service) fire(sb sandbox.Handle, info api.AlertInfo, value float64) {
	s.log.Info("alert fired", "sandbox", sb.ID(), "alert", info.AlertID, "metric", info.Metric, "value", value, "action", info.Action)
	sb.Emit(api.EventAlertFired, map[string]any{"alert_id": info.AlertID, "metric": info.Metric, "value": value,
		"threshold": info.Threshold, "for_secs": info.ForSecs, "action": info.Action})
	switch info.Action {
	case api.AlertPause:
		go func() {
			if err := sb.Pause(); err != nil {
				s.log.Warn("pausing a sandbox for an alert", "sandbox", sb.ID(), "err", err)
			}
		}()
	case api.AlertStop:
		sb.Stop(runtime.End{Cause: runtime.CauseAlert, Detail: fmt.Sprintf("alert %s: %s %.0f above %.0f for %d s", info.AlertID, info.Metric, value, info.Threshold, info.ForSecs)})
	}
}
