package api

import (
	"encoding/json"
)

// Events (hutch extensions beyond the seeds' contract): what happened to
// the caller's sandboxes, kept by the daemon.

// Function ids of the event functions.
const (
	FnEventsList    = "sandbox::events::list"
	FnEventsStream  = "sandbox::events::stream"
	FnEventsPublish = "sandbox::events::publish"
)

// Event types the daemon records.
const (
	EventSandboxCreated = "sandbox.created"
	EventSandboxStopped = "sandbox.stopped"
	EventSandboxPaused  = "sandbox.paused"
	EventSandboxResumed = "sandbox.resumed"
	EventSandboxForked  = "sandbox.forked"
	EventSnapshotMade   = "snapshot.created"
	EventSandboxReady   = "sandbox.ready"
	EventExecStarted    = "exec.started"
	EventExecFinished   = "exec.finished"
	EventProcessStarted = "process.started"
	EventProcessExited  = "process.exited"
	EventImageBuilt     = "image.built"
	EventImagePulled    = "image.pulled"
	EventPortExposed    = "port.exposed"
	// EventStreamOpen begins every event stream, before any event: its
	// data is {"after": id}, and it has no id of its own.
	EventStreamOpen = "open"
	// AfterNow as EventsRequest.After skips every event already recorded.
	AfterNow = "now"
	// EventCustomPrefix begins the type of an event a caller published.
	EventCustomPrefix = "custom."
)

// EventRecord is one event.
type EventRecord struct {
	// ID orders events; a stream resumes after one (Last-Event-ID).
	ID        string          `json:"id"`
	Time      string          `json:"time"`
	Type      string          `json:"type"`
	SandboxID string          `json:"sandbox_id,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	// issue 36: Node is the cluster node that recorded it (cluster mode
	// only); there ID is a cursor over every node's events.
	Node string `json:"node,omitempty"`
}

// EventsRequest is the payload of sandbox::events::list and ::stream.
type EventsRequest struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	// Type keeps the events of this type, or pattern ("sandbox.*").
	Type string `json:"type,omitempty"`
	// Since keeps the events at or after this time (RFC 3339).
	Since string `json:"since,omitempty"`
	// After keeps the events after this id (a cursor); AfterNow ("now")
	// keeps only those recorded from now on.
	After string `json:"after,omitempty"`
	// Limit bounds a list's answer (default and most: 1000).
	Limit int `json:"limit,omitempty"`
}

// EventsResponse is the result of sandbox::events::list.
type EventsResponse struct {
	Events []EventRecord `json:"events"`
	// Next is the cursor (after) of the next page when there is one.
	Next string `json:"next,omitempty"`
}

// PublishRequest is the payload of sandbox::events::publish.
type PublishRequest struct {
	// Topic names the event: its type is "custom.<topic>".
	Topic     string          `json:"topic"`
	SandboxID string          `json:"sandbox_id,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

func (r *EventsRequest) SandboxIDField() *string { return &r.SandboxID }

// FnWebhookDeliveries lists the latest webhook deliveries; the other
// webhook functions add, list and remove webhooks at run time (all an
// operator's).
const (
	FnWebhookDeliveries = "hutch::webhook::deliveries"
	FnWebhookCreate     = "hutch::webhook::create"
	FnWebhookList       = "hutch::webhook::list"
	FnWebhookDelete     = "hutch::webhook::delete"
)

// WebhookCreateRequest is the payload of hutch::webhook::create.
type WebhookCreateRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Secret string   `json:"secret"`
}

// WebhookInfo describes a webhook (never its secret).
type WebhookInfo struct {
	WebhookID string   `json:"webhook_id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	// Configured says it comes from the config file: it cannot be
	// deleted at run time.
	Configured bool `json:"configured"`
}

// WebhookRequest names a webhook.
type WebhookRequest struct {
	WebhookID string `json:"webhook_id"`
}

// WebhookListResponse is the result of hutch::webhook::list.
type WebhookListResponse struct {
	Webhooks []WebhookInfo `json:"webhooks"`
}

// WebhookDeliveriesRequest is the payload of hutch::webhook::deliveries
// (no fields).
type WebhookDeliveriesRequest struct{}

// WebhookDelivery is what became of one event sent to one webhook.
type WebhookDelivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	URL       string `json:"url"`
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	Attempts  int    `json:"attempts"`
	Status    int    `json:"status,omitempty"`
	Error     string `json:"error,omitempty"`
	Delivered bool   `json:"delivered"`
	Time      string `json:"time"`
}

// WebhookDeliveriesResponse is the result of hutch::webhook::deliveries:
// the latest 1000, newest first.
type WebhookDeliveriesResponse struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
}
