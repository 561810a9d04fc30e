package sandbox

import (
	"sync"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
)

// deniedNames coalesces the names sandboxes' policies refused into
// egress.denied events (events.Denials), reported every denialPoll.
type deniedNames struct {
	once sync.Once // makes d and starts its reporter
	d    *events.Denials
}

// deniedName records that sb's policy refused name.
func (m *Manager) deniedName(sb *sandbox, name string) {
	dn := &m.deniedNames
	dn.once.Do(func() {
		dn.d = events.NewDenials(m.events, api.EventEgressDenied)
		m.destroying.Go(func() { dn.d.Run(m.shutdown.Done(), denialPoll) })
	})
	dn.d.Denied(sb.rec.Owner, sb.rec.ID, name)
}
