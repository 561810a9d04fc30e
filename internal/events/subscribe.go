package events

import (
	"context"
	"errors"
)

// Bounds of a subscriber's backlog: the events handed to it and not yet
// taken. One that would pass either, or take the backlogs of its owner's
// subscribers together past the owner's byte quota (OwnerMaxBytes), is
// cut: its backlog is dropped and Next answers ErrFellBehind; it
// subscribes again after the last id it took and misses nothing the log
// still holds.
const (
	SubscriberQueue = 1024
	SubscriberBytes = 1 << 20
)

// Why a subscription ended.
var (
	// ErrFellBehind: the subscriber's backlog passed its bound.
	ErrFellBehind = errors.New("the event subscriber fell behind")
	// ErrClosed: the subscription or the log was closed.
	ErrClosed = errors.New("the event subscription is closed")
)

// Subscription is a live feed of the events a filter keeps.
type Subscription struct {
	l      *Log
	filter Filter
	// wake is signalled when the backlog gains an event or the
	// subscription ends.
	wake chan struct{}

	// Guarded by l.mu: the backlog, oldest first, its bytes, and why the
	// subscription ended (nil while it runs).
	backlog []Event
	bytes   int
	err     error
}

// Subscribe returns the events f keeps that the log holds (f.After and
// on), then feeds the later ones to the subscription, with nothing lost
// or repeated between the two.
func (l *Log) Subscribe(f Filter) ([]Event, *Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var past []Event
	for e := range l.keptLocked(f) {
		past = append(past, e)
	}
	s := &Subscription{l: l, filter: f, wake: make(chan struct{}, 1)}
	if l.closed {
		s.err = ErrClosed
		return past, s
	}
	l.subs[s] = struct{}{}
	return past, s
}

// publishLocked hands e to the subscribers it matches. One whose backlog
// e would take past its bound is cut; when e would take the backlogs of
// the subscriber's owner past its quota, the owner's subscribers furthest
// behind are cut until it fits.
func (l *Log) publishLocked(e Event) {
	size := Size(e)
	for s := range l.subs {
		if !s.filter.Match(e) {
			continue
		}
		if len(s.backlog) >= SubscriberQueue || s.bytes+size > SubscriberBytes {
			l.cutLocked(s)
			continue
		}
		for s.owned() && l.opts.OwnerMaxBytes > 0 && l.backlogs[s.filter.Owner]+size > l.opts.OwnerMaxBytes {
			l.cutLocked(l.furthestBehindLocked(s))
		}
		if s.err != nil {
			continue // it was the furthest behind
		}
		s.backlog = append(s.backlog, e)
		s.bytes += size
		if s.owned() {
			l.backlogs[s.filter.Owner] += size
		}
		s.signal()
	}
}

// cutLocked ends s for falling behind.
func (l *Log) cutLocked(s *Subscription) {
	l.cut++
	s.endLocked(ErrFellBehind)
}

// furthestBehindLocked is the subscriber of s's owner with the largest
// backlog: s when it has none larger, or when its owner's others hold
// nothing.
func (l *Log) furthestBehindLocked(s *Subscription) *Subscription {
	far := s
	for o := range l.subs {
		if o.owned() && o.filter.Owner == s.filter.Owner && o.bytes > far.bytes {
			far = o
		}
	}
	return far
}

// endLocked ends s with err and drops its backlog.
func (s *Subscription) endLocked(err error) {
	delete(s.l.subs, s)
	s.takeBacklogLocked(s.bytes)
	s.backlog, s.bytes, s.err = nil, 0, err
	s.signal()
}

// owned reports whether s counts against its owner's backlogs: an
// operator's subscribers (webhooks) are bounded by their number instead.
func (s *Subscription) owned() bool { return !s.filter.AllOwners }

// takeBacklogLocked takes n bytes off the backlogs of s's owner.
func (s *Subscription) takeBacklogLocked(n int) {
	if !s.owned() {
		return
	}
	b := s.l.backlogs
	if b[s.filter.Owner] -= n; b[s.filter.Owner] <= 0 {
		delete(b, s.filter.Owner)
	}
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next event, waiting for one. It fails with
// ErrFellBehind once the subscriber was cut, ErrClosed once it or the log
// was closed, and ctx's error when ctx ends first.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.l.mu.Lock()
		if len(s.backlog) > 0 {
			e := s.backlog[0]
			s.backlog[0] = Event{}
			s.backlog = s.backlog[1:]
			s.bytes -= Size(e)
			s.takeBacklogLocked(Size(e))
			s.l.mu.Unlock()
			return e, nil
		}
		s.backlog = nil // the next append starts a fresh array
		err := s.err
		s.l.mu.Unlock()
		if err != nil {
			return Event{}, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close ends the subscription; it is idempotent.
func (s *Subscription) Close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.err == nil {
		s.endLocked(ErrClosed)
	}
}
