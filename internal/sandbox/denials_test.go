package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// TestDeniedNamesAreCoalesced: thousands of refusals of a few names, and
// more names than are counted apart, make a few events whose counts add
// up to the refusals; a name refused again after a quiet interval is
// recorded at once.
func TestDeniedNamesAreCoalesced(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx := context.Background()
	id := create(t, m, api.CreateRequest{Image: "python"})
	sb, err := m.lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	const floods, each, extra = 3, 5000, maxDeniedNames + 8
	total := 0
	for i := range each {
		for n := range floods {
			m.deniedName(sb, fmt.Sprintf("flood%d.test", n))
			total++
		}
		if i < extra {
			m.deniedName(sb, fmt.Sprintf("name%d.test", i))
			total++
		}
	}
	m.flushDeniedNames()
	counts := func() (events int, sum uint64, byName map[string]uint64) {
		list := logged(t, m, id, api.EventEgressDenied)
		byName = map[string]uint64{}
		for _, e := range list {
			var d struct {
				Name       string
				Count      uint64
				OtherNames bool `json:"other_names"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Count == 0 || (d.Name == "") != d.OtherNames {
				t.Fatalf("event %s: %v", e.Data, err)
			}
			sum += d.Count
			byName[d.Name] += d.Count
		}
		return len(list), sum, byName
	}
	n, sum, byName := counts()
	// Each name counted apart: one event at once, one at the interval's
	// end (none for a name refused once); the rest: one event.
	if most := 2*floods + (maxDeniedNames - floods) + 1; n > most || sum != uint64(total) {
		t.Fatalf("%d refusals made %d events (at most %d) counting %d", total, n, most, sum)
	}
	for i := range floods {
		if got := byName[fmt.Sprintf("flood%d.test", i)]; got != each {
			t.Errorf("flood%d.test: counted %d, want %d", i, got, each)
		}
	}
	if byName[""] != extra-(maxDeniedNames-floods) {
		t.Errorf("names past the first %d: counted %d, want %d", maxDeniedNames, byName[""], extra-(maxDeniedNames-floods))
	}

	// A flood going on: one event per interval. Quiet for an interval: the
	// name is forgotten, and its next refusal recorded at once.
	m.deniedName(sb, "flood0.test")
	m.flushDeniedNames()
	m.flushDeniedNames()
	m.deniedName(sb, "flood0.test")
	if n2, sum2, _ := counts(); n2 != n+2 || sum2 != sum+2 {
		t.Errorf("after two more refusals an interval apart: %d events counting %d, want %d counting %d", n2, sum2, n+2, sum+2)
	}
}
