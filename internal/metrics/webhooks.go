package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hutch-dev/hutch/internal/webhooks"
)

// The webhooks' metrics, read from the dispatcher at every scrape:
//
//	hutch_webhook_deliveries_total{result}  counter  deliveries: delivered, failed (attempts ran out)
//	hutch_webhook_attempts_total            counter  every try
var (
	webhookDeliveriesDesc = prometheus.NewDesc("hutch_webhook_deliveries_total",
		"Webhook deliveries since the daemon started, by result: delivered, or failed once their attempts ran out.", []string{"result"}, nil)
	webhookAttemptsDesc = prometheus.NewDesc("hutch_webhook_attempts_total",
		"Webhook delivery tries since the daemon started, retries included.", nil, nil)
)

// webhookCollector reads the dispatcher's counts at scrape time.
type webhookCollector struct {
	stats func() webhooks.Stats
}

// WatchWebhooks exports the counts stats reports (webhooks.Dispatcher.Stats).
func (m *Metrics) WatchWebhooks(stats func() webhooks.Stats) {
	m.reg.MustRegister(webhookCollector{stats: stats})
}

// Describe implements prometheus.Collector.
func (webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- webhookDeliveriesDesc
	ch <- webhookAttemptsDesc
}

// Collect implements prometheus.Collector.
func (c webhookCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(webhookDeliveriesDesc, prometheus.CounterValue, float64(st.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(webhookDeliveriesDesc, prometheus.CounterValue, float64(st.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(webhookAttemptsDesc, prometheus.CounterValue, float64(st.Attempts))
}
