package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutch-dev/hutch/api"
)

// eventsQuery is req as the event routes' query.
func eventsQuery(req api.EventsRequest) string {
	q := url.Values{}
	for k, v := range map[string]string{"sandbox_id": req.SandboxID, "type": req.Type, "since": req.Since, "after": req.After} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// ListEvents runs sandbox::events::list.
func (c *Client) ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	var out api.EventsResponse
	return out, c.do(ctx, http.MethodGet, "/v1/events"+eventsQuery(req), nil, &out)
}

// StreamEvents runs sandbox::events::stream, calling on for every event
// until ctx ends, on fails, or the daemon ends the stream. A stream the
// daemon cut because it fell behind (S218: on took too long, or the
// connection was slow) is opened again after the last event received, so
// on misses nothing the log still holds; one cut before any event is not.
func (c *Client) StreamEvents(ctx context.Context, req api.EventsRequest, on func(api.EventRecord) error) error {
	for {
		got := false
		err := c.streamEvents(ctx, http.MethodGet, "/v1/events/stream"+eventsQuery(req), nil, func(typ string, data json.RawMessage) error {
			if typ == api.EventStreamOpen {
				// The cursor the daemon resolved ("now" included).
				var open struct{ After string }
				if json.Unmarshal(data, &open) == nil && open.After != "" {
					req.After = open.After
				}
				return nil
			}
			var e api.EventRecord
			if err := json.Unmarshal(data, &e); err != nil {
				return err
			}
			req.After, got = e.ID, true
			return on(e)
		}, nil)
		var env *api.ErrorEnvelope
		if !got || !errors.As(err, &env) || env.Code != streamFellBehind {
			return err
		}
	}
}

// streamFellBehind is the code of an event stream cut for falling behind.
const streamFellBehind = "S218"

// PublishEvent runs sandbox::events::publish.
func (c *Client) PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error) {
	var out api.EventRecord
	return out, c.do(ctx, http.MethodPost, "/v1/events", req, &out)
}

// CreateAlert runs sandbox::alert::create.
func (c *Client) CreateAlert(ctx context.Context, req api.AlertCreateRequest) (api.AlertInfo, error) {
	return sandboxCall[api.AlertInfo](ctx, c, req.SandboxID, "/alerts", req)
}

// ListAlerts runs sandbox::alert::list (sandboxID "" for all).
func (c *Client) ListAlerts(ctx context.Context, sandboxID string) (api.AlertListResponse, error) {
	var out api.AlertListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/alerts"+eventsQuery(api.EventsRequest{SandboxID: sandboxID}), nil, &out)
}

// AlertHistory runs sandbox::alert::history (sandboxID "" for all).
func (c *Client) AlertHistory(ctx context.Context, sandboxID string) (api.EventsResponse, error) {
	var out api.EventsResponse
	q := url.Values{"history": {"true"}}
	if sandboxID != "" {
		q.Set("sandbox_id", sandboxID)
	}
	return out, c.do(ctx, http.MethodGet, "/v1/alerts?"+q.Encode(), nil, &out)
}

// DeleteAlert runs sandbox::alert::delete.
func (c *Client) DeleteAlert(ctx context.Context, id string) (api.AlertDeleteResponse, error) {
	var out api.AlertDeleteResponse
	return out, c.do(ctx, http.MethodDelete, "/v1/alerts/"+url.PathEscape(id), nil, &out)
}

// CreateWebhook runs hutch::webhook::create.
func (c *Client) CreateWebhook(ctx context.Context, req api.WebhookCreateRequest) (api.WebhookInfo, error) {
	var out api.WebhookInfo
	return out, c.do(ctx, http.MethodPost, "/v1/webhooks", req, &out)
}

// ListWebhooks runs hutch::webhook::list.
func (c *Client) ListWebhooks(ctx context.Context) (api.WebhookListResponse, error) {
	var out api.WebhookListResponse
	return out, c.do(ctx, http.MethodGet, "/v1/webhooks", nil, &out)
}

// DeleteWebhook runs hutch::webhook::delete.
func (c *Client) DeleteWebhook(ctx context.Context, id string) (api.WebhookInfo, error) {
	var out api.WebhookInfo
	return out, c.do(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(id), nil, &out)
}

// WebhookDeliveries runs hutch::webhook::deliveries.
func (c *Client) WebhookDeliveries(ctx context.Context) (api.WebhookDeliveriesResponse, error) {
	var out api.WebhookDeliveriesResponse
	return out, c.do(ctx, http.MethodGet, "/v1/webhooks/deliveries", nil, &out)
}
