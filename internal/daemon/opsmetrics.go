package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// registerDiskMetrics exports the data dir's filesystem, read at every
// scrape, for the disk-nearly-full alert (deploy/prometheus):
//
//	hutch_data_dir_free_bytes   gauge  bytes free to the daemon under the data dir
//	hutch_data_dir_size_bytes   gauge  size of the data dir's filesystem
func (d *daemon) registerDiskMetrics() {
	statfs := func(free bool) float64 {
		var st unix.Statfs_t
		if unix.Statfs(d.opts.DataDir, &st) != nil {
			return 0
		}
		if free {
			return float64(st.Bavail) * float64(st.Bsize)
		}
		return float64(st.Blocks) * float64(st.Bsize)
	}
	reg := d.obs.metrics.Registry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hutch_data_dir_free_bytes",
		Help: "Bytes free to the daemon on the data dir's filesystem."}, func() float64 { return statfs(true) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hutch_data_dir_size_bytes",
		Help: "Size of the data dir's filesystem."}, func() float64 { return statfs(false) }))
}
