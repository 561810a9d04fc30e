// Package eventsvc is the event service (sandbox::events::*): it lists and
// streams the caller's events from the daemon's event log
// (internal/events), and records the caller's own (custom.<topic>). The
// core records what happens to sandboxes in the same log; the service
// only reads it back, scoped to the caller's owner.
package eventsvc

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxEventsPage bounds a list's answer.
const maxEventsPage = 1000

// maxPublishedBytes bounds the data of a published event.
const maxPublishedBytes = 64 << 10

// topicName is what a published event's topic may be.
var topicName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

var eventType = regexp.MustCompile(`^[A-Za-z0-9._*-]*$`)

// Sandboxes finds the caller's sandbox a published event is about: S001
// for a malformed id, S002 for an unknown one or another owner's,
// whatever its state (the core's Get).
type Sandboxes interface {
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
}

// Service answers the event functions (functions.Events).
type Service struct {
	sbs Sandboxes
	log *events.Log
}

// New is the event service over the daemon's event log; without a log it
// lists nothing and refuses to stream or publish (S302).
func New(sbs Sandboxes, log *events.Log) *Service {
	return &Service{sbs: sbs, log: log}
}

// noLog is the refusal of a daemon without an event log.
func noLog() error {
	return errdefs.New(errdefs.CodeUnsupported, "the daemon's runtime cannot record events (no event log)")
}

// filter checks req and turns it into the caller's filter.
func (s *Service) filter(ctx context.Context, req api.EventsRequest) (events.Filter, error) {
	f := events.Filter{Owner: auth.OwnerFrom(ctx), Type: req.Type}
	if req.SandboxID != "" {
		id, err := spec.ParseID(req.SandboxID)
		if err != nil {
			return f, err
		}
		f.SandboxID = id
	}
	if len(req.Type) > 64 || !eventType.MatchString(req.Type) {
		return f, errdefs.Malformed("type %q must be an event type or pattern (letters, digits, . _ - *)", spec.Clip(req.Type, 64))
	}
	if req.Since != "" {
		t, err := time.Parse(time.RFC3339, req.Since)
		if err != nil {
			return f, errdefs.Malformed("since %q is not an RFC 3339 time", spec.Clip(req.Since, 64))
		}
		f.Since = t
	}
	if req.After == api.AfterNow && s.log != nil {
		f.After = s.log.Last()
	} else if req.After != "" {
		n, err := strconv.ParseUint(req.After, 10, 64)
		if err != nil {
			return f, errdefs.Malformed("after %q is not an event id", spec.Clip(req.After, 64))
		}
		f.After = n
	}
	return f, nil
}

// ListEvents answers the caller's events, oldest first, a page at a time
// (sandbox::events::list).
func (s *Service) ListEvents(ctx context.Context, req api.EventsRequest) (api.EventsResponse, error) {
	f, err := s.filter(ctx, req)
	if err != nil {
		return api.EventsResponse{}, err
	}
	if req.Limit < 0 || req.Limit > maxEventsPage {
		return api.EventsResponse{}, errdefs.Malformed("limit must be between 0 (%d) and %d, got %d", maxEventsPage, maxEventsPage, req.Limit)
	}
	out := api.EventsResponse{Events: []api.EventRecord{}}
	if s.log == nil {
		return out, nil
	}
	limit := req.Limit
	if limit == 0 {
		limit = maxEventsPage
	}
	evs, more := s.log.List(f, limit)
	for _, e := range evs {
		out.Events = append(out.Events, record(e))
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
func (s *Service) StreamEvents(ctx context.Context, req api.EventsRequest, emit func(event string, data any, id string) error) error {
	f, err := s.filter(ctx, req)
	if err != nil {
		return err
	}
	if s.log == nil {
		return noLog()
	}
	past, sub := s.log.Subscribe(f)
	defer sub.Close()
	// The first event answers the request at once, before anything
	// happens: the client knows it is subscribed.
	if err := emit(api.EventStreamOpen, map[string]any{"after": strconv.FormatUint(f.After, 10)}, ""); err != nil {
		return err
	}
	for _, e := range past {
		if err := emit(e.Type, record(e), strconv.FormatUint(e.ID, 10)); err != nil {
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
		if err := emit(e.Type, record(e), strconv.FormatUint(e.ID, 10)); err != nil {
			return err
		}
	}
}

// PublishEvent records a caller's own event, "custom.<topic>"
// (sandbox::events::publish).
func (s *Service) PublishEvent(ctx context.Context, req api.PublishRequest) (api.EventRecord, error) {
	if !topicName.MatchString(req.Topic) {
		return api.EventRecord{}, errdefs.Malformed("topic %q must be 1 to 64 lowercase letters, digits and . _ -", spec.Clip(req.Topic, 64))
	}
	if len(req.Data) > maxPublishedBytes {
		return api.EventRecord{}, errdefs.Malformed("data is %d bytes; at most %d", len(req.Data), maxPublishedBytes)
	}
	id := ""
	if req.SandboxID != "" {
		sb, err := s.sbs.Get(ctx, api.GetRequest{SandboxID: req.SandboxID})
		if err != nil {
			return api.EventRecord{}, err
		}
		id = sb.SandboxID
	}
	if s.log == nil {
		return api.EventRecord{}, noLog()
	}
	e := s.log.Append(events.Event{Type: api.EventCustomPrefix + req.Topic, Owner: auth.OwnerFrom(ctx), SandboxID: id, Data: req.Data})
	return record(e), nil
}

// record is e as the API shows it.
func record(e events.Event) api.EventRecord {
	return api.EventRecord{ID: strconv.FormatUint(e.ID, 10), Time: e.Time.Format(time.RFC3339Nano), Type: e.Type, SandboxID: e.SandboxID, Data: e.Data}
}
