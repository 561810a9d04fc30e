package sandbox

import (
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// Refused names: the resolver tells the manager each name a sandbox's
// policy refused, as often as the sandbox asks. A sandbox that asks
// thousands of times a second must not write thousands of events (each
// also sent to every webhook), so the refusals are counted per sandbox
// and name over denialPoll: the first refusal of a name is recorded at
// once ({"name", "count": 1}), and the further ones of each interval as
// one event at its end ({"name", "count"}). A name refused through a
// whole interval stays counted; one not refused in an interval is
// forgotten, and its next refusal is again recorded at once. Past
// maxDeniedNames names in an interval, a sandbox's further names are
// counted together ({"other_names": true, "count"}), so the counts of a
// sandbox's events always add up to its refused queries.

// maxDeniedNames bounds the names counted apart per sandbox and interval.
const maxDeniedNames = 32

// deniedNames counts the refused names of every sandbox.
type deniedNames struct {
	once sync.Once // starts the reporter
	// mu guards bySandbox.
	mu        sync.Mutex
	bySandbox map[string]*sandboxDenials
}

// sandboxDenials are one sandbox's refusals not yet recorded.
type sandboxDenials struct {
	owner string
	// names counts each name's refusals since the last report (0 for a
	// name recorded at once); other those past maxDeniedNames names.
	names map[string]uint64
	other uint64
}

// deniedName records that sb's policy refused name.
func (m *Manager) deniedName(sb *sandbox, name string) {
	d := &m.deniedNames
	d.once.Do(func() { m.destroying.Go(m.reportDeniedNames) })
	d.mu.Lock()
	if d.bySandbox == nil {
		d.bySandbox = map[string]*sandboxDenials{}
	}
	s := d.bySandbox[sb.rec.ID]
	if s == nil {
		s = &sandboxDenials{owner: sb.rec.Owner, names: map[string]uint64{}}
		d.bySandbox[sb.rec.ID] = s
	}
	// Recorded under d.mu, so that no report of the name precedes it.
	switch n, known := s.names[name]; {
	case known:
		s.names[name] = n + 1
	case len(s.names) >= maxDeniedNames:
		s.other++
	default:
		s.names[name] = 0
		m.emit(api.EventEgressDenied, s.owner, sb.rec.ID, map[string]any{"name": name, "count": 1})
	}
	d.mu.Unlock()
}

// reportDeniedNames records the counted refusals every denialPoll, and
// once more when the manager shuts down.
func (m *Manager) reportDeniedNames() {
	t := time.NewTicker(denialPoll)
	defer t.Stop()
	for {
		select {
		case <-m.shutdown.Done():
			m.flushDeniedNames()
			return
		case <-t.C:
			m.flushDeniedNames()
		}
	}
}

// flushDeniedNames records the refusals counted since the last time and
// forgets the names refused no more.
func (m *Manager) flushDeniedNames() {
	type report struct {
		owner, id string
		data      map[string]any
	}
	var out []report
	d := &m.deniedNames
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, s := range d.bySandbox {
		for name, n := range s.names {
			if n == 0 {
				delete(s.names, name)
				continue
			}
			out = append(out, report{s.owner, id, map[string]any{"name": name, "count": n}})
			s.names[name] = 0
		}
		if s.other > 0 {
			out = append(out, report{s.owner, id, map[string]any{"other_names": true, "count": s.other}})
			s.other = 0
		}
		if len(s.names) == 0 {
			delete(d.bySandbox, id)
		}
	}
	for _, r := range out {
		m.emit(api.EventEgressDenied, r.owner, r.id, r.data)
	}
}
