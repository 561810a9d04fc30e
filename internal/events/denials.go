package events

import (
	"encoding/json"
	"sync"
	"time"
)

// Denials coalesces the names sandboxes' policies refused into events.
// The resolver reports each refusal, as often as a sandbox asks; a
// sandbox that asks thousands of times a second must not write thousands
// of events (each also sent to every webhook), so the refusals are
// counted per sandbox and name over an interval (Flush): the first
// refusal of a name is recorded at once ({"name", "count": 1}), and the
// further ones of each interval as one event at its end ({"name",
// "count"}). A name refused through a whole interval stays counted; one
// not refused in an interval is forgotten, and its next refusal is again
// recorded at once. Past MaxDeniedNames names in an interval, a sandbox's
// further names are counted together ({"other_names": true, "count"}), so
// the counts of a sandbox's events always add up to its refused queries.
type Denials struct {
	log *Log
	typ string
	// mu guards bySandbox.
	mu        sync.Mutex
	bySandbox map[string]*sandboxDenials
}

// MaxDeniedNames bounds the names counted apart per sandbox and interval.
const MaxDeniedNames = 32

// sandboxDenials are one sandbox's refusals not yet recorded.
type sandboxDenials struct {
	owner string
	// names counts each name's refusals since the last report (0 for a
	// name recorded at once); other those past MaxDeniedNames names.
	names map[string]uint64
	other uint64
}

// NewDenials records refusals in log as events of type typ; with a nil
// log it only counts them.
func NewDenials(log *Log, typ string) *Denials {
	return &Denials{log: log, typ: typ, bySandbox: map[string]*sandboxDenials{}}
}

// Denied records that the policy of sandbox id, of owner, refused name.
func (d *Denials) Denied(owner, id, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.bySandbox[id]
	if s == nil {
		s = &sandboxDenials{owner: owner, names: map[string]uint64{}}
		d.bySandbox[id] = s
	}
	// Recorded under d.mu, so that no report of the name precedes it.
	switch n, known := s.names[name]; {
	case known:
		s.names[name] = n + 1
	case len(s.names) >= MaxDeniedNames:
		s.other++
	default:
		s.names[name] = 0
		d.record(s.owner, id, map[string]any{"name": name, "count": 1})
	}
}

// Run calls Flush every interval until done is closed, and once more then.
func (d *Denials) Run(done <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			d.Flush()
			return
		case <-t.C:
			d.Flush()
		}
	}
}

// Flush records the refusals counted since the last time and forgets the
// names refused no more.
func (d *Denials) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, s := range d.bySandbox {
		for name, n := range s.names {
			if n == 0 {
				delete(s.names, name)
				continue
			}
			d.record(s.owner, id, map[string]any{"name": name, "count": n})
			s.names[name] = 0
		}
		if s.other > 0 {
			d.record(s.owner, id, map[string]any{"other_names": true, "count": s.other})
			s.other = 0
		}
		if len(s.names) == 0 {
			delete(d.bySandbox, id)
		}
	}
}

// record appends one event of the sandbox's refusals.
func (d *Denials) record(owner, id string, data map[string]any) {
	if d.log == nil {
		return
	}
	raw, _ := json.Marshal(data) // strings and numbers: it cannot fail
	d.log.Append(Event{Type: d.typ, Owner: owner, SandboxID: id, Data: raw})
}
