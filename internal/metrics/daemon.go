package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Daemon is what the daemon runs on, fixed for its life.
type Daemon struct {
	// Runtimes are the isolation runtimes it offers.
	Runtimes []Runtime
	// Capacity is max_concurrent_sandboxes.
	Capacity int
}

// Runtime is one runtime a daemon offers.
type Runtime struct {
	// Name is the runtime's, Mode how it isolates here ("systrap",
	// "tcg"), Abilities its optional operations (runtime.Abilities).
	Name, Mode, Abilities string
	// Default marks the runtime of creates that name none.
	Default bool
}

// SetDaemon exports d:
//
//	hutch_runtime_info{runtime,mode,abilities,default}   gauge   1 per runtime offered
//	hutch_sandboxes_capacity                             gauge   max_concurrent_sandboxes
func (m *Metrics) SetDaemon(d Daemon) {
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hutch_runtime_info",
		Help: "The isolation runtimes this daemon offers (always 1), how they isolate, their optional abilities and which is the default.",
	}, []string{"runtime", "mode", "abilities", "default"})
	for _, rt := range d.Runtimes {
		info.WithLabelValues(rt.Name, rt.Mode, rt.Abilities, strconv.FormatBool(rt.Default)).Set(1)
	}
	capacity := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hutch_sandboxes_capacity",
		Help: "Most live sandboxes of every owner at once (max_concurrent_sandboxes).",
	})
	capacity.Set(float64(d.Capacity))
	m.reg.MustRegister(info, capacity)
}
