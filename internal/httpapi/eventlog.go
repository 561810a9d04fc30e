package httpapi

// The event log's routes: sandbox::events::list and ::stream with their
// filter from the query, a stream resuming after Last-Event-ID, and
// publishing.

import (
	"encoding/json"
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// eventRoutes are the routes of the event functions, for New's table.
func (s *server) eventRoutes() []route {
	return []route{
		{"GET", "/v1/events", s.eventQuery(api.FnEventsList), false, routeDoc{fn: api.FnEventsList, query: eventQuery}},
		{"GET", "/v1/events/stream", s.eventQuery(api.FnEventsStream), false, routeDoc{fn: api.FnEventsStream, stream: true, query: eventQuery}},
		s.fnRoute("POST", "/v1/events", routeDoc{fn: api.FnEventsPublish, body: true}),
		{"GET", "/v1/sandboxes/{id}/events", s.eventQuery(api.FnEventsList), false, routeDoc{fn: api.FnEventsList, query: eventQuery}},
		s.fnRoute("GET", "/v1/webhooks/deliveries", routeDoc{fn: api.FnWebhookDeliveries}),
		s.fnRoute("POST", "/v1/webhooks", routeDoc{fn: api.FnWebhookCreate, body: true}),
		s.fnRoute("GET", "/v1/webhooks", routeDoc{fn: api.FnWebhookList}),
		{"DELETE", "/v1/webhooks/{webhook_id}", s.deleteWebhook, false, routeDoc{fn: api.FnWebhookDelete}},
		{"GET", "/v1/sandboxes/{id}/metrics/stream", s.metricsStream, false, routeDoc{fn: api.FnMetricsStream, stream: true, query: []queryParam{q("interval_ms", "integer", "100 to 60000 (1000)")}}},
		s.fnRoute("POST", "/v1/sandboxes/{id}/alerts", routeDoc{fn: api.FnAlertCreate, body: true}, sandboxParam),
		{"GET", "/v1/alerts", s.alertQuery, false, routeDoc{fn: api.FnAlertList, query: []queryParam{q("sandbox_id", "string", ""), q("history", "boolean", "the alerts that fired (sandbox::alert::history)")}}},
		{"DELETE", "/v1/alerts/{alert_id}", s.deleteAlert, false, routeDoc{fn: api.FnAlertDelete}},
	}
}

// eventQuery dispatches to function id with an api.EventsRequest made of
// the query (sandbox_id, type, since, after, limit) and, for a stream,
// Last-Event-ID as after; {id} in the path is the sandbox.
func (s *server) eventQuery(id string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		req := api.EventsRequest{SandboxID: q.Get("sandbox_id"), Type: q.Get("type"), Since: q.Get("since"), After: q.Get("after")}
		if last := r.Header.Get("Last-Event-ID"); last != "" && req.After == "" {
			req.After = last
		}
		var err error
		if req.Limit, err = queryCount(q, "limit"); err != nil {
			return nil, err
		}
		if pathID := r.PathValue("id"); pathID != "" {
			if req.SandboxID != "" && req.SandboxID != pathID {
				return nil, errdefs.Malformed("sandbox_id in the query (%q) does not match the URL (%q)", req.SandboxID, pathID)
			}
			req.SandboxID = pathID
		}
		body, _ := json.Marshal(req)
		return s.dispatch(r, id, body, functions.Params{})
	}
}

// metricsStream is sandbox::metrics::stream with ?interval_ms= from the query.
func (s *server) metricsStream(r *http.Request, _ []byte) (any, error) {
	ms, err := queryCount(r.URL.Query(), "interval_ms")
	if err != nil {
		return nil, err
	}
	req := api.MetricsStreamRequest{SandboxID: r.PathValue("id"), IntervalMs: uint64(ms)}
	body, _ := json.Marshal(req)
	return s.dispatch(r, api.FnMetricsStream, body, functions.Params{})
}

// alertQuery is sandbox::alert::list, or with ?history=true
// sandbox::alert::history, with ?sandbox_id= from the query.
func (s *server) alertQuery(r *http.Request, _ []byte) (any, error) {
	history, _, err := queryBool(r, "history")
	if err != nil {
		return nil, err
	}
	id := api.FnAlertList
	if history {
		id = api.FnAlertHistory
	}
	body, _ := json.Marshal(api.AlertListRequest{SandboxID: r.URL.Query().Get("sandbox_id")})
	return s.dispatch(r, id, body, functions.Params{})
}

// deleteAlert is sandbox::alert::delete of {alert_id}.
func (s *server) deleteAlert(r *http.Request, _ []byte) (any, error) {
	body, _ := json.Marshal(api.AlertRequest{AlertID: r.PathValue("alert_id")})
	return s.dispatch(r, api.FnAlertDelete, body, functions.Params{})
}

// deleteWebhook is hutch::webhook::delete of {webhook_id}.
func (s *server) deleteWebhook(r *http.Request, _ []byte) (any, error) {
	body, _ := json.Marshal(api.WebhookRequest{WebhookID: r.PathValue("webhook_id")})
	return s.dispatch(r, api.FnWebhookDelete, body, functions.Params{})
}
