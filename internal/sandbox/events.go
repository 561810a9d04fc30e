package sandbox

import (
	"encoding/json"

	"github.com/hutch-dev/hutch/internal/events"
)

// Events: the manager records what happens to sandboxes in the event log
// (Options.Events); without a log it records nothing. eventsvc reads the
// log back for their owners (sandbox::events::*).

// emit records an event of typ about sandbox id for owner; data is
// encoded as JSON.
func (m *Manager) emit(typ, owner, id string, data any) {
	if m.events == nil {
		return
	}
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			m.log.Error("encoding an event", "type", typ, "err", err)
			return
		}
		raw = b
	}
	m.events.Append(events.Event{Type: typ, Owner: owner, SandboxID: id, Data: raw})
}

// emitFor records an event about sb.
func (m *Manager) emitFor(sb *sandbox, typ string, data any) {
	m.emit(typ, sb.rec.Owner, sb.rec.ID, data)
}
