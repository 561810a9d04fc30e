package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hutch-dev/hutch/internal/events"
)

// The event log's metrics, read from the log at every scrape:
//
//	hutch_events_kept                   gauge    events the log holds, all owners
//	hutch_events_kept_bytes             gauge    their bytes, as the log's bounds count them
//	hutch_event_subscribers_cut_total   counter  streams and hooks cut for falling behind
var (
	eventsKeptDesc = prometheus.NewDesc("hutch_events_kept",
		"Events the event log holds, all owners together.", nil, nil)
	eventsKeptBytesDesc = prometheus.NewDesc("hutch_events_kept_bytes",
		"Bytes of the events the event log holds, as events_max_mb counts them.", nil, nil)
	eventSubscribersCutDesc = prometheus.NewDesc("hutch_event_subscribers_cut_total",
		"Event subscribers (streams, triggers, webhooks) cut since the daemon started because their backlog passed its bound.", nil, nil)
)

// eventsCollector reads the log's accounting at scrape time.
type eventsCollector struct{ log *events.Log }

// WatchEvents exports what log holds and the subscribers it cut.
func (m *Metrics) WatchEvents(log *events.Log) {
	m.reg.MustRegister(eventsCollector{log: log})
}

// Describe implements prometheus.Collector.
func (eventsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- eventsKeptDesc
	ch <- eventsKeptBytesDesc
	ch <- eventSubscribersCutDesc
}

// Collect implements prometheus.Collector.
func (c eventsCollector) Collect(ch chan<- prometheus.Metric) {
	u := c.log.Usage()
	ch <- prometheus.MustNewConstMetric(eventsKeptDesc, prometheus.GaugeValue, float64(u.Count))
	ch <- prometheus.MustNewConstMetric(eventsKeptBytesDesc, prometheus.GaugeValue, float64(u.Bytes))
	ch <- prometheus.MustNewConstMetric(eventSubscribersCutDesc, prometheus.CounterValue, float64(c.log.SubscribersCut()))
}
