package metrics

import (
	"strings"
	"testing"
)

func TestSetDaemon(t *testing.T) {
	m := New(Sources{})
	m.SetDaemon(Daemon{Runtime: "gvisor", Abilities: "pause,checkpoint", Capacity: 32})
	out := scrape(t, m)
	for _, want := range []string{
		`hutch_runtime_info{abilities="pause,checkpoint",runtime="gvisor"} 1` + "\n",
		"hutch_sandboxes_capacity 32\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}
