// Package events keeps what happened to sandboxes: an append-only log of
// typed events with increasing ids, bounded by count and age, kept in
// memory for reading and streaming and written to a bbolt file in batches,
// so that recording never waits for the disk and the log outlives the
// daemon.
package events

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Event is one thing that happened.
type Event struct {
	ID        uint64          `json:"id"`
	Time      time.Time       `json:"time"`
	Type      string          `json:"type"`
	SandboxID string          `json:"sandbox_id,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// Filter selects events: each set field must match. Type is a path.Match
// pattern ("sandbox.*").
type Filter struct {
	// Owner's events only, unless AllOwners (an operator's reader).
	Owner     string
	AllOwners bool
	SandboxID string
	Type      string
	// After keeps the events with a greater id.
	After uint64
	// Since keeps the events at or after it.
	Since time.Time
}

// Match reports whether e passes f.
func (f Filter) Match(e Event) bool {
	if (!f.AllOwners && e.Owner != f.Owner) || e.ID <= f.After || (f.SandboxID != "" && e.SandboxID != f.SandboxID) || e.Time.Before(f.Since) {
		return false
	}
	if f.Type != "" {
		if ok, _ := path.Match(f.Type, e.Type); !ok {
			return false
		}
	}
	return true
}

// Options bound a Log.
type Options struct {
	// MaxCount and MaxAge bound what is kept; older events are dropped.
	MaxCount int
	MaxAge   time.Duration
	Logger   *slog.Logger
}

// subscriberQueue is how many events a subscriber may have untaken before
// it is dropped (its channel closed): it reconnects after the last id it
// saw and misses nothing the log still holds.
const subscriberQueue = 1024

// flushEvery is how often the log writes its new events to disk.
const flushEvery = 200 * time.Millisecond

var bucket = []byte("events")

// Log is the event log.
type Log struct {
	opts Options
	db   *bolt.DB

	mu      sync.Mutex
	ring    []Event // oldest first, at most MaxCount
	nextID  uint64
	pending []Event
	subs    map[*Subscription]struct{}
	closed  bool

	stop, done chan struct{}
}

// Open opens (creating) the log at file and loads what it kept.
func Open(file string, opts Options) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening the event log %s: %w", file, err)
	}
	l := &Log{opts: opts, db: db, nextID: 1, subs: map[*Subscription]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	cutoff := time.Now().Add(-opts.MaxAge)
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var e Event
			if json.Unmarshal(v, &e) != nil {
				continue
			}
			l.nextID = max(l.nextID, e.ID+1)
			if e.Time.After(cutoff) {
				l.ring = append(l.ring, e)
			}
		}
		if over := len(l.ring) - opts.MaxCount; over > 0 {
			l.ring = l.ring[over:]
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	go l.flusher()
	return l, nil
}

// Append records e, giving it its id and time, and hands it to the
// subscribers that match it. It never waits for the disk or a subscriber.
func (l *Log) Append(e Event) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return e
	}
	e.ID, e.Time = l.nextID, time.Now().UTC()
	l.nextID++
	l.ring = append(l.ring, e)
	if len(l.ring) > l.opts.MaxCount {
		l.ring = l.ring[len(l.ring)-l.opts.MaxCount:]
	}
	l.pending = append(l.pending, e)
	for s := range l.subs {
		if !s.filter.Match(e) {
			continue
		}
		select {
		case s.ch <- e:
		default: // too slow: it reconnects after what it saw
			delete(l.subs, s)
			close(s.ch)
		}
	}
	return e
}

// Last is the id of the newest event recorded, 0 for none.
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextID - 1
}

// List returns up to limit events that f keeps, oldest first, and whether
// more follow.
func (l *Log) List(f Filter, limit int) ([]Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.ring {
		if !f.Match(e) || l.expired(e) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

func (l *Log) expired(e Event) bool { return time.Since(e.Time) > l.opts.MaxAge }

// Subscription is a live feed of the events a filter keeps.
type Subscription struct {
	l      *Log
	filter Filter
	ch     chan Event
}

// C delivers the events; it is closed when the subscriber fell behind or
// the log closed.
func (s *Subscription) C() <-chan Event { return s.ch }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if _, ok := s.l.subs[s]; ok {
		delete(s.l.subs, s)
		close(s.ch)
	}
}

// Subscribe returns the events f keeps that the log holds (f.After and
// on), then feeds the later ones to the subscription, with nothing lost
// or repeated between the two.
func (l *Log) Subscribe(f Filter) ([]Event, *Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var past []Event
	for _, e := range l.ring {
		if f.Match(e) && !l.expired(e) {
			past = append(past, e)
		}
	}
	s := &Subscription{l: l, filter: f, ch: make(chan Event, subscriberQueue)}
	if l.closed {
		close(s.ch)
		return past, s
	}
	l.subs[s] = struct{}{}
	return past, s
}

// flusher writes pending events every flushEvery and drops expired ones
// from the file, until Close.
func (l *Log) flusher() {
	defer close(l.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-t.C:
			l.flush()
		}
	}
}

// flush writes the pending events and trims the file to what the ring
// holds.
func (l *Log) flush() {
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	var oldest uint64
	if len(l.ring) > 0 {
		oldest = l.ring[0].ID
	}
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for _, e := range batch {
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(key(e.ID), v); err != nil {
				return err
			}
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < oldest; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		l.opts.Logger.Error("writing the event log", "err", err)
	}
}

func key(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// Close writes what is pending, ends every subscription and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for s := range l.subs {
		delete(l.subs, s)
		close(s.ch)
	}
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	return l.db.Close()
}
