package events

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

// TestDeniedNamesAreCoalesced: thousands of refusals of a few names, and
// more names than are counted apart, make a few events whose counts add
// up to the refusals; a name refused again after a quiet interval is
// recorded at once.
func TestDeniedNamesAreCoalesced(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.db"), 100000)
	t.Cleanup(func() { l.Close() })
	d := NewDenials(l, "egress.denied")
	const owner, id = "alice", "00000000-0000-4000-8000-00000000a11c"
	const floods, each, extra = 3, 5000, MaxDeniedNames + 8
	total := 0
	for i := range each {
		for n := range floods {
			d.Denied(owner, id, fmt.Sprintf("flood%d.test", n))
			total++
		}
		if i < extra {
			d.Denied(owner, id, fmt.Sprintf("name%d.test", i))
			total++
		}
	}
	// Another sandbox's refusals are its own.
	d.Denied("bob", "other", "flood0.test")
	d.Flush()
	counts := func() (events int, sum uint64, byName map[string]uint64) {
		list, _ := l.List(Filter{Owner: owner, SandboxID: id, Type: "egress.denied"}, 100000)
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
	if most := 2*floods + (MaxDeniedNames - floods) + 1; n > most || sum != uint64(total) {
		t.Fatalf("%d refusals made %d events (at most %d) counting %d", total, n, most, sum)
	}
	for i := range floods {
		if got := byName[fmt.Sprintf("flood%d.test", i)]; got != each {
			t.Errorf("flood%d.test: counted %d, want %d", i, got, each)
		}
	}
	if byName[""] != extra-(MaxDeniedNames-floods) {
		t.Errorf("names past the first %d: counted %d, want %d", MaxDeniedNames, byName[""], extra-(MaxDeniedNames-floods))
	}
	if bobs, _ := l.List(Filter{Owner: "bob"}, 10); len(bobs) != 1 || bobs[0].SandboxID != "other" || string(bobs[0].Data) != `{"count":1,"name":"flood0.test"}` {
		t.Errorf("bob's events: %+v", bobs)
	}

	// A flood going on: one event per interval. Quiet for an interval: the
	// name is forgotten, and its next refusal recorded at once.
	d.Denied(owner, id, "flood0.test")
	d.Flush()
	d.Flush()
	d.Denied(owner, id, "flood0.test")
	if n2, sum2, _ := counts(); n2 != n+2 || sum2 != sum+2 {
		t.Errorf("after two more refusals an interval apart: %d events counting %d, want %d counting %d", n2, sum2, n+2, sum+2)
	}
}

// TestDenialsRunFlushesAtTheEnd: the reporter records what is counted
// once done is closed, and returns.
func TestDenialsRunFlushesAtTheEnd(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.db"), 100)
	t.Cleanup(func() { l.Close() })
	d := NewDenials(l, "egress.denied")
	d.Denied("alice", "a", "x.test")
	d.Denied("alice", "a", "x.test")
	done := make(chan struct{})
	close(done)
	d.Run(done, 1<<62)
	if list, _ := l.List(Filter{Owner: "alice"}, 10); len(list) != 2 || string(list[1].Data) != `{"count":1,"name":"x.test"}` {
		t.Errorf("events %+v", list)
	}
	// Without a log it counts and records nothing.
	NewDenials(nil, "egress.denied").Denied("alice", "a", "x.test")
}
