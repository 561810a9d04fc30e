package metrics

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/sandbox/warmpool"
)

func TestWarmPoolMetrics(t *testing.T) {
	stats := []warmpool.Stat{
		{Image: "node", Target: 1, Ready: 0, Claims: map[string]uint64{"hit": 0, "empty": 0, "shape": 0}},
		{Image: "python", Target: 2, Ready: 1, Claims: map[string]uint64{"hit": 3, "empty": 1, "shape": 0}},
	}
	m := New(Sources{})
	m.WatchWarmPool(func() []warmpool.Stat { return stats })

	out := scrape(t, m)
	for _, want := range []string{
		`hutch_warm_pool_target{image="python"} 2` + "\n",
		`hutch_warm_pool_target{image="node"} 1` + "\n",
		`hutch_warm_pool_ready{image="python"} 1` + "\n",
		`hutch_warm_pool_ready{image="node"} 0` + "\n",
		`hutch_warm_pool_claims_total{image="python",result="hit"} 3` + "\n",
		`hutch_warm_pool_claims_total{image="python",result="empty"} 1` + "\n",
		`hutch_warm_pool_claims_total{image="python",result="shape"} 0` + "\n",
		`hutch_warm_pool_hit_ratio{image="python"} 0.75` + "\n",
		"# TYPE hutch_warm_pool_claims_total counter\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if strings.Contains(out, `hutch_warm_pool_hit_ratio{image="node"}`) {
		t.Error("hit ratio of an image without creates is exported")
	}

	// Read at scrape time; a daemon without a pool exports nothing.
	stats = nil
	if out := scrape(t, m); strings.Contains(out, "hutch_warm_pool_") {
		t.Errorf("pool metrics without a pool:\n%s", out)
	}
}
