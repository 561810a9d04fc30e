package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
)

// Events: the manager records what happens to sandboxes in the event log
// (Options.Events), and reads it back for their owners. Without a log it
// records nothing and lists nothing.

// maxEventsPage bounds a list's answer.
const maxEventsPage = 1000

// maxPublishedBytes bounds the data of a published event.
const maxPublishedBytes = 64 << 10

// topicName is what a published event's topic may be.
var topicName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

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

// eventFilter checks req and turns it into the caller's filter.
func (m *Manager) eventFilter(ctx context.Context, req api.EventsRequest) (events.Filter, error) {
	f := events.Filter{Owner: auth.OwnerFrom(ctx), Type: req.Type}
	if req.SandboxID != "" {
		id, err := parseID(req.SandboxID)
		if err != nil {
			return f, err
		}
		f.SandboxID = id
	}
	if len(req.Type) > 64 || !safeType(req.Type) {
		return f, errdefs.Malformed("type %q must be an event type or pattern (letters, digits, . _ - *)", clip(req.Type, 64))
	}
	if req.Since != "" {
		t, err := time.Parse(time.RFC3339, req.Since)
		if err != nil {
			return f, errdefs.Malformed("since %q is not an RFC 3339 time", clip(req.Since, 64))
		}
		f.Since = t
	}
	if req.After == api.AfterNow && m.events != nil {
		f.After = m.events.Last()
	} else if req.After != "" {
		n, err := strconv.ParseUint(req.After, 10, 64)
		if err != nil {
			return f, errdefs.Malformed("after %q is not an event id", clip(req.After, 64))
		}
		f.After = n
	}
	return f, nil
}

var eventType = regexp.MustCompile(`^[A-Za-z0-9._*-]*$`)

func safeType(s string) bool { return eventType.MatchString(s) }

// ListEvents answers the caller's events, oldest first, a page at a time
// (sandbox::events::list).
func (m *Manager) ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	f, err := m.eventFilter(ctx, req)
	if err != nil {
		return api.EventsResponse{}, err
	}
	if req.Limit < 0 || req.Limit > maxEventsPage {
		return api.EventsResponse{}, errdefs.Malformed("limit must be between 0 (%d) and %d, got %d", maxEventsPage, maxEventsPage, req.Limit)
	}
	out := api.EventsResponse{Events: []api.EventRecord{}}
	if m.events == nil {
		return out, nil
	}
	limit := req.Limit
	if limit == 0 {
		limit = maxEventsPage
	}
	evs, more := m.events.List(f, limit)
	for _, e := range evs {
		out.Events = append(out.Events, eventRecord(e))
	}
	if more && len(evs) > 0 {
		out.Next = strconv.FormatUint(evs[len(evs)-1].ID, 10)
	}
	return out, nil
}

// StreamEvents emits an "open" event, then the caller's events as they
// happen, those the log holds after req.After first
// (sandbox::events::stream). A subscriber whose backlog passes the log's
// bound (events.SubscriberQueue events or events.SubscriberBytes) is cut
// off with S218; it resumes after the last id it saw.
func (m *Manager) StreamEvents(ctx context.Context, req api.EventsRequest, emit func(event string, data any, id string) error) error {
	f, err := m.eventFilter(ctx, req)
	if err != nil {
		return err
	}
	if m.events == nil {
		return unsupported("daemon's", "record events (no event log)")
	}
	past, sub := m.events.Subscribe(f)
	defer sub.Close()
	// The first event answers the request at once, before anything
	// happens: the client knows it is subscribed.
	if err := emit(api.EventStreamOpen, map[string]any{"after": strconv.FormatUint(f.After, 10)}, ""); err != nil {
		return err
	}
	for _, e := range past {
		if err := emit(e.Type, eventRecord(e), strconv.FormatUint(e.ID, 10)); err != nil {
			return err
		}
	}
	for {
		e, err := sub.Next(ctx)
		switch {
		case errors.Is(err, events.ErrFellBehind):
			return errdefs.New(errdefs.CodeFSStreamAborted, "the event stream fell behind (more than %d events or %d KiB not yet read); resume after the last event id received",
				events.SubscriberQueue, events.SubscriberBytes>>10)
		case err != nil:
			return err
		}
		if err := emit(e.Type, eventRecord(e), strconv.FormatUint(e.ID, 10)); err != nil {
			return err
		}
	}
}

// PublishEvent records a caller's own event, "custom.<topic>"
// (sandbox::events::publish).
func (m *Manager) PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error) {
	if !topicName.MatchString(req.Topic) {
		return api.EventRecord{}, errdefs.Malformed("topic %q must be 1 to 64 lowercase letters, digits and . _ -", clip(req.Topic, 64))
	}
	if len(req.Data) > maxPublishedBytes {
		return api.EventRecord{}, errdefs.Malformed("data is %d bytes; at most %d", len(req.Data), maxPublishedBytes)
	}
	id := ""
	if req.SandboxID != "" {
		sb, err := m.lookup(ctx, req.SandboxID)
		if err != nil {
			return api.EventRecord{}, err
		}
		id = sb.rec.ID
	}
	if m.events == nil {
		return api.EventRecord{}, unsupported("daemon's", "record events (no event log)")
	}
	e := m.events.Append(events.Event{Type: api.EventCustomPrefix + req.Topic, Owner: auth.OwnerFrom(ctx), SandboxID: id, Data: req.Data})
	return eventRecord(e), nil
}

// eventRecord is e as the API shows it.
func eventRecord(e events.Event) api.EventRecord {
	return api.EventRecord{ID: strconv.FormatUint(e.ID, 10), Time: e.Time.Format(time.RFC3339Nano), Type: e.Type, SandboxID: e.SandboxID, Data: e.Data}
}
