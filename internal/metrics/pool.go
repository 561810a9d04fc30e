package metrics

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
)

// The warm pool's metrics, read from the manager at every scrape:
//
//	hutch_warm_pool_target{image}              gauge     planned size, all shapes (pinned by warm_pool, or sized by demand)
//	hutch_warm_pool_ready{image}               gauge     pre-booted sandboxes waiting now
//	hutch_warm_pool_claims_total{image,result} counter   creates of a pooled image: hit, empty, shape
//	hutch_warm_pool_hit_ratio{image}           gauge     hits / creates of the image so far (absent before the first)
var (
	poolTargetDesc = prometheus.NewDesc("hutch_warm_pool_target",
		"Planned warm pool size of an image, over all its shapes: pinned by warm_pool, or sized by recent creates.", []string{"image"}, nil)
	poolReadyDesc = prometheus.NewDesc("hutch_warm_pool_ready",
		"Pre-booted sandboxes waiting in an image's warm pool.", []string{"image"}, nil)
	poolClaimsDesc = prometheus.NewDesc("hutch_warm_pool_claims_total",
		"Creates of an image that has a warm pool, by result: hit (took a pool sandbox), empty (none was ready), shape (asked for more cpus or memory than any of the pool's shapes, for volumes, or for a network the pool could not give).",
		[]string{"image", "result"}, nil)
	poolHitRatioDesc = prometheus.NewDesc("hutch_warm_pool_hit_ratio",
		"Share of an image's creates that took a warm pool sandbox, since the daemon started.", []string{"image"}, nil)
)

// poolCollector reads the warm pool's state at scrape time.
type poolCollector struct {
	stats func() []warmpool.Stat
}

// WatchWarmPool exports the warm pool that stats reports
// (sandbox.Manager.WarmPool). Call it once; an image without a pool
// exports nothing.
func (m *Metrics) WatchWarmPool(stats func() []warmpool.Stat) {
	m.reg.MustRegister(poolCollector{stats: stats})
}

// Describe implements prometheus.Collector.
func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolTargetDesc
	ch <- poolReadyDesc
	ch <- poolClaimsDesc
	ch <- poolHitRatioDesc
}

// Collect implements prometheus.Collector.
func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.stats() {
		ch <- prometheus.MustNewConstMetric(poolTargetDesc, prometheus.GaugeValue, float64(st.Target), st.Image)
		ch <- prometheus.MustNewConstMetric(poolReadyDesc, prometheus.GaugeValue, float64(st.Ready), st.Image)
		results := make([]string, 0, len(st.Claims))
		var total uint64
		for r, n := range st.Claims {
			results = append(results, r)
			total += n
		}
		sort.Strings(results)
		for _, r := range results {
			ch <- prometheus.MustNewConstMetric(poolClaimsDesc, prometheus.CounterValue, float64(st.Claims[r]), st.Image, r)
		}
		if total > 0 {
			ch <- prometheus.MustNewConstMetric(poolHitRatioDesc, prometheus.GaugeValue, float64(st.Claims["hit"])/float64(total), st.Image)
		}
	}
}
