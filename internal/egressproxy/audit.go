package egressproxy

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/events"
)

// Audit limits: the decisions kept per sandbox, and the events recorded
// per sandbox per window (the others are counted in the next one).
const (
	keptDecisions = 100
	eventsPerWin  = 20
	eventWindow   = time.Minute
)

// Decision is one decision of the proxy, as GET
// /v1/sandboxes/{id}/egress lists it.
type Decision = api.EgressDecision

// audit keeps recent decisions and records refusals as events.
type audit struct {
	log *events.Log
	mu  sync.Mutex
	by  map[string]*trail // guarded by mu
	// denied counts refusals by Decision.Kind since the start, suppressed
	// events' included. Guarded by mu.
	denied map[string]uint64
}

// DeniedKinds are the kinds of refusals Denied counts: what named the
// destination (a TLS SNI, an HTTP Host, or only an address).
var DeniedKinds = []string{"sni", "host", "address"}

// trail is one sandbox's recent decisions and event budget.
type trail struct {
	decisions  []Decision
	winStart   time.Time
	inWin      int
	suppressed int
}

func newAudit(log *events.Log) *audit {
	return &audit{log: log, by: map[string]*trail{}, denied: map[string]uint64{}}
}

// record keeps d, a decision about sb, and records it as an event when it
// is a refusal and sb's budget allows.
func (a *audit) record(sb Sandbox, d Decision) {
	d.Time = time.Now().UTC().Format(time.RFC3339Nano)
	a.mu.Lock()
	t := a.by[sb.ID]
	if t == nil {
		t = &trail{}
		a.by[sb.ID] = t
	}
	t.decisions = append(t.decisions, d)
	if len(t.decisions) > keptDecisions {
		t.decisions = slices.Delete(t.decisions, 0, len(t.decisions)-keptDecisions)
	}
	if !d.Allowed {
		a.denied[d.Kind]++
	}
	if d.Allowed && len(d.Secrets) == 0 {
		a.mu.Unlock()
		return
	}
	emit, suppressed := t.budget(time.Now())
	a.mu.Unlock()
	if !emit {
		return
	}
	if !d.Allowed {
		a.emit(sb, api.EventEgressDenied, struct {
			Decision
			Suppressed int `json:"suppressed,omitempty"`
		}{d, suppressed})
		return
	}
	for _, name := range d.Secrets {
		a.emit(sb, api.EventEgressSecretUsed, map[string]any{"secret": name, "host": d.Name, "port": d.Port, "suppressed": suppressed})
	}
}

// budget takes one event from t's window at now; suppressed counts those
// left out since the last one recorded.
func (t *trail) budget(now time.Time) (emit bool, suppressed int) {
	if now.Sub(t.winStart) >= eventWindow {
		t.winStart, t.inWin = now, 0
	}
	if t.inWin >= eventsPerWin {
		t.suppressed++
		return false, 0
	}
	t.inWin++
	suppressed, t.suppressed = t.suppressed, 0
	return true, suppressed
}

// emit appends an event of type typ about sb.
func (a *audit) emit(sb Sandbox, typ string, data any) {
	if a.log == nil {
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	a.log.Append(events.Event{Type: typ, Owner: sb.Owner, SandboxID: sb.ID, Data: raw})
}

// recent is sandbox id's decisions, oldest first.
func (a *audit) recent(id string) []Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.by[id]; t != nil {
		return slices.Clone(t.decisions)
	}
	return []Decision{}
}

func (a *audit) forget(id string) {
	a.mu.Lock()
	delete(a.by, id)
	a.mu.Unlock()
}

// deniedOf is the number of refusals of kind so far.
func (a *audit) deniedOf(kind string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.denied[kind]
}
