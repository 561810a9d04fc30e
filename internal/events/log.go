// Package events keeps what happened to sandboxes: an append-only log of
// typed events with increasing ids, bounded by count, bytes and age, kept
// in memory for reading and streaming and written to a bbolt file in
// batches, so that recording never waits for the disk and the log
// outlives the daemon.
//
// Owners share the log but not its room: each owner's events are held in
// their own queue under a count and a byte quota, so an owner that floods
// the log drops its own oldest events, not another's. When the log as a
// whole is full, the owner holding the most gives up its oldest event.
package events

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hutch-dev/hutch/internal/storefmt"
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

// eventOverhead is what an event takes besides its data and strings, as
// the byte bounds count it: its id, time and slice headers in memory, its
// key and JSON field names in the file.
const eventOverhead = 128

// Size is what e counts against the byte bounds: its data and strings,
// and eventOverhead for the rest.
func Size(e Event) int {
	return eventOverhead + len(e.Type) + len(e.SandboxID) + len(e.Owner) + len(e.Data)
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

// Options bound a Log. A zero per-owner bound is the log's own, a zero
// MaxBytes no byte bound.
type Options struct {
	// MaxCount and MaxBytes bound what the log keeps, all owners
	// together (bytes as Size counts them); MaxAge how long it keeps it.
	MaxCount int
	MaxBytes int
	MaxAge   time.Duration
	// OwnerMaxCount and OwnerMaxBytes bound what it keeps of one owner.
	OwnerMaxCount int
	OwnerMaxBytes int
	Logger        *slog.Logger
}

// flushEvery is how often the log writes its new events to disk.
const flushEvery = 200 * time.Millisecond

var bucket = []byte("events")

// metaBucket holds lastKey: the id of the newest event written, so that
// ids go on increasing when every event kept was dropped.
var metaBucket, lastKey = []byte("meta"), []byte("last")

// migrations are the event log's format migrations (storefmt).
var migrations = []storefmt.Migration{
	// 0 → 1: the events and meta buckets are unchanged; the log gets its
	// version.
	func(*bolt.Tx) error { return nil },
}

// Log is the event log.
type Log struct {
	opts Options
	db   *bolt.DB

	// mu guards the fields below, and every Subscription's queue. Lock
	// order: Log.mu, then nothing.
	mu sync.Mutex
	// owners holds each owner's events, oldest first; an owner with none
	// has no entry.
	owners       map[string]*queue
	count, bytes int // of every owner's queue
	nextID       uint64
	// pending are the events not yet written, dropped the ids dropped from
	// memory since the last flush, to delete from the file.
	pending []Event
	dropped []uint64
	subs    map[*Subscription]struct{}
	// backlogs are the bytes of each owner's subscribers' backlogs.
	backlogs map[string]int
	cut      uint64 // subscribers cut for falling behind
	closed   bool

	stop, done chan struct{}
}

// Open opens (creating) the log at file and loads what it kept, within
// opts' bounds.
func Open(file string, opts Options) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OwnerMaxCount <= 0 || opts.OwnerMaxCount > opts.MaxCount {
		opts.OwnerMaxCount = opts.MaxCount
	}
	if opts.OwnerMaxBytes <= 0 || (opts.MaxBytes > 0 && opts.OwnerMaxBytes > opts.MaxBytes) {
		opts.OwnerMaxBytes = opts.MaxBytes
	}
	db, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening the event log %s: %w", file, err)
	}
	l := &Log{opts: opts, db: db, nextID: 1, owners: map[string]*queue{}, subs: map[*Subscription]struct{}{}, backlogs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := storefmt.Bolt(tx, "the event log "+file, migrations); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := meta.Get(lastKey); len(v) == 8 {
			l.nextID = binary.BigEndian.Uint64(v) + 1
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var e Event
			if json.Unmarshal(v, &e) != nil {
				l.dropped = append(l.dropped, binary.BigEndian.Uint64(k))
				continue
			}
			l.nextID = max(l.nextID, e.ID+1)
			if l.expired(e) {
				l.dropped = append(l.dropped, e.ID)
				continue
			}
			l.addLocked(e)
		}
		// What the bounds dropped (they may have shrunk) leaves the file.
		for _, id := range l.dropped {
			if err := b.Delete(key(id)); err != nil {
				return err
			}
		}
		l.dropped = nil
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	if l.db, err = compactLarge(file, db, opts); err != nil {
		return nil, err
	}
	go l.flusher()
	return l, nil
}

// fileCeiling is the size past which Open compacts the file: bbolt reuses
// the pages of deleted events but never gives them back, and grows the
// file by doubling, so a log within maxBytes stays under four times it.
func fileCeiling(maxBytes int) int64 { return 4*int64(maxBytes) + 16<<20 }

// compactLarge returns db, or a compacted copy of it in its place when
// its file is past fileCeiling (a file written under larger bounds, or by
// a hutch without them).
func compactLarge(file string, db *bolt.DB, opts Options) (*bolt.DB, error) {
	fi, err := os.Stat(file)
	if opts.MaxBytes <= 0 || err != nil || fi.Size() <= fileCeiling(opts.MaxBytes) {
		return db, nil
	}
	tmp := file + ".compact"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err == nil {
		err = errors.Join(bolt.Compact(dst, db, 16<<20), dst.Close())
	}
	if err != nil {
		os.Remove(tmp)
		opts.Logger.Warn("compacting the event log", "file", file, "err", err)
		return db, nil
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, file); err != nil {
		opts.Logger.Warn("compacting the event log", "file", file, "err", err)
	}
	opts.Logger.Info("compacted the event log", "file", file, "bytes_before", fi.Size())
	if db, err = bolt.Open(file, 0o600, &bolt.Options{Timeout: 2 * time.Second}); err != nil {
		return nil, fmt.Errorf("opening the event log %s: %w", file, err)
	}
	return db, nil
}

// Append records e, giving it its id and time, and hands it to the
// subscribers that match it. It never waits for the disk or a subscriber.
// Making room for it drops the oldest event of its owner when the owner
// is over its quota, and of the owner holding the most when the log is
// full.
func (l *Log) Append(e Event) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return e
	}
	e.ID, e.Time = l.nextID, time.Now().UTC()
	e.Data = bytes.Clone(e.Data) // no more than its own bytes stay held
	l.nextID++
	l.addLocked(e)
	l.pending = append(l.pending, e)
	l.publishLocked(e)
	return e
}

// addLocked keeps e, the newest event, and drops what the bounds no
// longer admit.
func (l *Log) addLocked(e Event) {
	q := l.owners[e.Owner]
	if q == nil {
		q = &queue{owner: e.Owner}
		l.owners[e.Owner] = q
	}
	q.push(e)
	l.count++
	l.bytes += Size(e)
	for q.len() > 1 && (q.len() > l.opts.OwnerMaxCount || (l.opts.OwnerMaxBytes > 0 && q.bytes > l.opts.OwnerMaxBytes)) {
		l.dropOldestLocked(q)
	}
	for l.count > l.opts.MaxCount || (l.opts.MaxBytes > 0 && l.bytes > l.opts.MaxBytes) {
		l.dropOldestLocked(l.largestLocked(l.count <= l.opts.MaxCount, e.Owner))
	}
}

// largestLocked is the queue of the owner holding the most bytes (byBytes)
// or events; prefer's when it holds as much as any other.
func (l *Log) largestLocked(byBytes bool, prefer string) *queue {
	size := func(q *queue) int {
		if byBytes {
			return q.bytes
		}
		return q.len()
	}
	best := l.owners[prefer]
	for _, q := range l.owners {
		if best == nil || size(q) > size(best) {
			best = q
		}
	}
	return best
}

// dropOldestLocked drops q's oldest event.
func (l *Log) dropOldestLocked(q *queue) {
	e := q.pop()
	l.count--
	l.bytes -= Size(e)
	l.dropped = append(l.dropped, e.ID)
	if q.len() == 0 {
		delete(l.owners, q.owner)
	}
}

// Last is the id of the newest event recorded, 0 for none.
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextID - 1
}

// Usage is what a log, or one owner's share of it, holds.
type Usage struct {
	Count int
	// Bytes as Size counts them.
	Bytes int
}

// Usage is what the log holds, all owners together.
func (l *Log) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Usage{Count: l.count, Bytes: l.bytes}
}

// OwnerUsage is what the log holds of owner's.
func (l *Log) OwnerUsage(owner string) Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.owners[owner]; q != nil {
		return Usage{Count: q.len(), Bytes: q.bytes}
	}
	return Usage{}
}

// SubscribersCut counts the subscribers cut for falling behind since the
// log opened.
func (l *Log) SubscribersCut() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

// List returns up to limit events that f keeps, oldest first, and whether
// more follow.
func (l *Log) List(f Filter, limit int) ([]Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for e := range l.keptLocked(f) {
		if len(out) == limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

func (l *Log) expired(e Event) bool { return time.Since(e.Time) > l.opts.MaxAge }

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

// flush drops the expired events, writes the pending ones and deletes
// from the file those dropped from memory.
func (l *Log) flush() {
	l.mu.Lock()
	for _, q := range l.owners {
		for q.len() > 0 && l.expired(q.front()) {
			l.dropOldestLocked(q)
		}
	}
	batch, dropped := l.pending, l.dropped
	l.pending, l.dropped = nil, nil
	l.mu.Unlock()
	if len(batch) == 0 && len(dropped) == 0 {
		return
	}
	gone := make(map[uint64]bool, len(dropped))
	for _, id := range dropped {
		gone[id] = true
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for _, e := range batch {
			if gone[e.ID] {
				continue // dropped before it was written
			}
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(key(e.ID), v); err != nil {
				return err
			}
		}
		for _, id := range dropped {
			if err := b.Delete(key(id)); err != nil {
				return err
			}
		}
		if len(batch) > 0 {
			return tx.Bucket(metaBucket).Put(lastKey, key(batch[len(batch)-1].ID))
		}
		return nil
	})
	if err != nil {
		// A full disk, say (issue 38: 2): the events stay in memory and the
		// next flush tries again. Only those still kept are queued again,
		// so a long failure holds no more than the log's bounds.
		l.opts.Logger.Error("writing the event log; will retry", "err", err, "events", len(batch))
		l.requeue(batch, dropped, gone)
	}
}

// requeue puts a failed flush's events and deletions back in front of
// those added since, leaving out the events dropped meanwhile (never
// written, so no deletion is needed either).
func (l *Log) requeue(batch []Event, dropped []uint64, gone map[uint64]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.dropped {
		gone[id] = true
	}
	unwritten := make(map[uint64]bool, len(batch))
	var keep []Event
	for _, e := range batch {
		unwritten[e.ID] = true
		if !gone[e.ID] {
			keep = append(keep, e)
		}
	}
	l.pending = append(keep, l.pending...)
	var del []uint64
	for _, id := range append(dropped, l.dropped...) {
		if !unwritten[id] {
			del = append(del, id)
		}
	}
	l.dropped = del
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
		s.endLocked(ErrClosed)
	}
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	return l.db.Close()
}
