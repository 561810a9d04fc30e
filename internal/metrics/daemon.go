package metrics

import "github.com/prometheus/client_golang/prometheus"

// Daemon is what the daemon runs on, fixed for its life.
type Daemon struct {
	// Runtime is the isolation runtime's name, Abilities its optional
	// operations (runtime.AbilitiesOf).
	Runtime, Abilities string
	// Capacity is max_concurrent_sandboxes.
	Capacity int
}

// SetDaemon exports d:
//
//	hutch_runtime_info{runtime,abilities}   gauge   1, the daemon's isolation runtime
//	hutch_sandboxes_capacity                gauge   max_concurrent_sandboxes
func (m *Metrics) SetDaemon(d Daemon) {
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hutch_runtime_info",
		Help: "The daemon's isolation runtime (always 1) and its optional abilities.",
	}, []string{"runtime", "abilities"})
	info.WithLabelValues(d.Runtime, d.Abilities).Set(1)
	capacity := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hutch_sandboxes_capacity",
		Help: "Most live sandboxes of every owner at once (max_concurrent_sandboxes).",
	})
	capacity.Set(float64(d.Capacity))
	m.reg.MustRegister(info, capacity)
}
