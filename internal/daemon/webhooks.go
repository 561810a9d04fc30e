package daemon

import (
	"context"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/webhooks"
)

// webhookDeliveries answers hutch::webhook::deliveries from the
// dispatcher, to operators only: a delivery names every owner's events.
type webhookDeliveries struct {
	cfg *config.Config
	d   *webhooks.Dispatcher
}

func (w webhookDeliveries) WebhookDeliveries(ctx context.Context, _ api.WebhookDeliveriesRequest) (api.WebhookDeliveriesResponse, error) {
	if !w.cfg.IsAdmin(auth.OwnerFrom(ctx)) {
		return api.WebhookDeliveriesResponse{}, errdefs.New(errdefs.CodeOperatorOnly, "only an operator may read webhook deliveries: they carry every owner's events")
	}
	out := api.WebhookDeliveriesResponse{Deliveries: []api.WebhookDelivery{}}
	for _, d := range w.d.Deliveries() {
		out.Deliveries = append(out.Deliveries, api.WebhookDelivery{ID: d.ID, URL: d.URL, EventID: strconv.FormatUint(d.EventID, 10),
			Type: d.Type, Attempts: d.Attempts, Status: d.Status, Error: d.Error, Delivered: d.Done, Time: d.Time.Format(time.RFC3339Nano)})
	}
	return out, nil
}

// hooksOf is the webhooks block as the dispatcher takes it.
func hooksOf(cfg []config.Webhook) []webhooks.Hook {
	out := make([]webhooks.Hook, len(cfg))
	for i, h := range cfg {
		out[i] = webhooks.Hook{URL: h.URL, Events: h.Events, Secret: h.Secret}
	}
	return out
}
