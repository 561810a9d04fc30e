package metrics

import (
	"strings"
	"testing"
)

func TestSetDaemon(t *testing.T) {
	m := New(Sources{})
	m.SetDaemon(Daemon{Runtimes: []Runtime{{Name: "gvisor", Mode: "systrap", Abilities: "pause,checkpoint", Default: true}, {Name: "microvm", Mode: "tcg", Abilities: "pause"}}, Capacity: 32})
	out := scrape(t, m)
	for _, want := range []string{
		`hutch_runtime_info{abilities="pause,checkpoint",default="true",mode="systrap",runtime="gvisor"} 1` + "\n",
		`hutch_runtime_info{abilities="pause",default="false",mode="tcg",runtime="microvm"} 1` + "\n",
		"hutch_sandboxes_capacity 32\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}
