package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// registerLifecycle adds sandbox::pause, sandbox::resume and
// sandbox::set_timeout: state moves of the core, on Sandboxes.
func registerLifecycle(t *Table) {
	l := t.deps.Sandboxes
	add(t, api.FnPause, "Pause a sandbox: depth freeze stops its CPU use and keeps its memory; calls answer S005 until it is resumed (or resume it, with auto_resume)", l.Pause)
	add(t, api.FnResume, "Resume a paused sandbox", l.Resume)
	add(t, api.FnSetTimeout, "Give a sandbox an absolute lifetime of timeout_secs from now, whatever its activity", l.SetTimeout)
}

// Snapshots are the dependency of the snapshot and template functions and
// of fork: the snapshot service (internal/sandbox/snapsvc).
type Snapshots interface {
	CreateSnapshot(ctx context.Context, req api.SnapshotCreateRequest) (api.SnapshotInfo, error)
	ListSnapshots(ctx context.Context, req api.SnapshotListRequest) (api.SnapshotListResponse, error)
	GetSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotInfo, error)
	DeleteSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotDeleteResponse, error)
	Fork(ctx context.Context, req api.ForkRequest) (api.ForkResponse, error)
	CreateTemplate(ctx context.Context, req api.TemplateCreateRequest) (api.TemplateInfo, error)
	ListTemplates(ctx context.Context, req api.TemplateListRequest) (api.TemplateListResponse, error)
	GetTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateInfo, error)
	DeleteTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateDeleteResponse, error)
}

// registerSnapshots adds sandbox::snapshot::*, sandbox::template::* and
// sandbox::fork, when the table has Snapshots.
func registerSnapshots(t *Table) {
	s := t.deps.Snapshots
	if s == nil {
		return
	}
	add(t, api.FnSnapshotCreate, "Snapshot a running sandbox (memory, processes, files); it goes on running. sandbox::create {snapshot_id} starts new sandboxes from it", s.CreateSnapshot)
	add(t, api.FnSnapshotList, "List your snapshots", s.ListSnapshots)
	add(t, api.FnSnapshotGet, "Describe one snapshot", s.GetSnapshot)
	add(t, api.FnSnapshotDelete, "Delete a snapshot", s.DeleteSnapshot)
	add(t, api.FnTemplateCreate, "Name a starting point for sandbox::create {template}: an image and defaults, a snapshot to restore, or the files of a running sandbox (from_sandbox)", s.CreateTemplate)
	add(t, api.FnTemplateList, "List your templates", s.ListTemplates)
	add(t, api.FnTemplateGet, "Describe one template", s.GetTemplate)
	add(t, api.FnTemplateDelete, "Delete a template", s.DeleteTemplate)
	add(t, api.FnFork, "Make count running copies of a sandbox from one checkpoint of it: each continues from the same memory and files, then diverges", t.fork) // issue 37: with its preview terms (preview.go)
}

// Events are the event functions' dependency: the event service (eventsvc).
type Events interface {
	ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error)
	StreamEvents(ctx context.Context, req api.EventsRequest, emit func(event string, data any, id string) error) error
	PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error)
}

// registerEvents adds sandbox::events::*, when the table has Events.
func registerEvents(t *Table) {
	ev := t.deps.Events
	if ev == nil {
		return
	}
	add(t, api.FnEventsList, "List what happened to your sandboxes (created, paused, exec finished, stopped with why, ...), oldest first, a page at a time", ev.ListEvents)
	addStream(t, api.FnEventsStream, "Stream what happens to your sandboxes as it happens, after the id given (after) first",
		func(ctx context.Context, req api.EventsRequest, e Emitter) (struct{}, error) {
			return struct{}{}, ev.StreamEvents(ctx, req, func(event string, data any, id string) error {
				return e.Emit(Event{Type: event, Data: data, ID: id})
			})
		})
	add(t, api.FnEventsPublish, "Record an event of your own (type custom.<topic>), about one of your sandboxes or none", ev.PublishEvent)
}

// Webhooks is the dependency of hutch::webhook::deliveries.
type Webhooks interface {
	WebhookDeliveries(ctx context.Context, req api.WebhookDeliveriesRequest) (api.WebhookDeliveriesResponse, error)
	CreateWebhook(ctx context.Context, req api.WebhookCreateRequest) (api.WebhookInfo, error)
	ListWebhooks(ctx context.Context, req struct{}) (api.WebhookListResponse, error)
	DeleteWebhook(ctx context.Context, req api.WebhookRequest) (api.WebhookInfo, error)
}

// registerWebhooks adds hutch::webhook::deliveries, when the table has
// Webhooks.
func registerWebhooks(t *Table) {
	if w := t.deps.Webhooks; w != nil {
		add(t, api.FnWebhookDeliveries, "The latest webhook deliveries, newest first: event, attempts, answer (an operator's)", w.WebhookDeliveries)
		add(t, api.FnWebhookCreate, "Add a webhook: events of the types named are POSTed to url, signed with secret; kept across restarts (an operator's)", w.CreateWebhook)
		add(t, api.FnWebhookList, "List the webhooks, configured and added (an operator's)", w.ListWebhooks)
		add(t, api.FnWebhookDelete, "Delete a webhook added at run time (an operator's)", w.DeleteWebhook)
	}
}

// Alerts are the alert functions' dependency: the sandbox manager.
type Alerts interface {
	CreateAlert(ctx context.Context, req api.AlertCreateRequest) (api.AlertInfo, error)
	ListAlerts(ctx context.Context, req api.AlertListRequest) (api.AlertListResponse, error)
	DeleteAlert(ctx context.Context, req api.AlertRequest) (api.AlertDeleteResponse, error)
	AlertHistory(ctx context.Context, req api.AlertListRequest) (api.EventsResponse, error)
}

// registerAlerts adds sandbox::alert::*, when the table has Alerts.
func registerAlerts(t *Table) {
	a := t.deps.Alerts
	if a == nil {
		return
	}
	add(t, api.FnAlertCreate, "Watch a sandbox's cpu (%), memory (MiB), pids or disk (MiB): above threshold for for_secs, record alert.fired and notify, pause or stop it", a.CreateAlert)
	add(t, api.FnAlertList, "List your alerts, of one sandbox or all", a.ListAlerts)
	add(t, api.FnAlertDelete, "Delete an alert", a.DeleteAlert)
	add(t, api.FnAlertHistory, "The alerts that fired: the alert.fired events", a.AlertHistory)
}

// Jobs are the job functions' dependency: the job runner.
type Jobs interface {
	Submit(ctx context.Context, req api.JobSubmitRequest) (api.JobInfo, error)
	Get(ctx context.Context, req api.JobRequest) (api.JobInfo, error)
	List(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error)
	Cancel(ctx context.Context, req api.JobRequest) (api.JobInfo, error)
	DeadLetters(ctx context.Context, req api.JobListRequest) (api.JobListResponse, error)
	Retry(ctx context.Context, req api.JobRequest) (api.JobInfo, error)
}

// registerJobs adds sandbox::job::*, when the table has Jobs.
func registerJobs(t *Table) {
	j := t.deps.Jobs
	if j == nil {
		return
	}
	add(t, api.FnJobSubmit, "Queue an exec to run in order in a sandbox, or in one created for it and stopped after; retried with backoff when the infrastructure fails it (and with retry_on_exit when it fails)", j.Submit)
	add(t, api.FnJobGet, "Describe a job: state, attempts, result, last error", j.Get)
	add(t, api.FnJobList, "List your jobs, newest first, by state or sandbox", j.List)
	add(t, api.FnJobCancel, "Cancel a queued job, or kill a running one's exec", j.Cancel)
	add(t, api.FnJobDLQ, "The dead-letter list: your jobs given up on, with their last error", j.DeadLetters)
	add(t, api.FnJobRetry, "Queue a job of the dead-letter list again", j.Retry)
}
