package events

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, file string, maxCount int) *Log {
	t.Helper()
	l, err := Open(file, Options{MaxCount: maxCount, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLogKeepsBoundsAndOutlivesAClose(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.db")
	l := open(t, file, 3)
	for i, typ := range []string{"sandbox.created", "exec.finished", "exec.finished", "sandbox.stopped"} {
		e := l.Append(Event{Type: typ, SandboxID: "a", Owner: "alice"})
		if e.ID != uint64(i+1) || e.Time.IsZero() {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	l.Append(Event{Type: "sandbox.created", SandboxID: "b", Owner: "bob"})
	got, more := l.List(Filter{Owner: "alice"}, 10)
	if len(got) != 2 || more || got[0].ID != 3 || got[1].Type != "sandbox.stopped" {
		t.Fatalf("alice's events in a log of 3: %+v (more %v)", got, more)
	}
	if got, _ := l.List(Filter{Owner: "alice", Type: "exec.*"}, 10); len(got) != 1 {
		t.Errorf("exec.* events: %+v", got)
	}
	if got, more := l.List(Filter{Owner: "bob"}, 0); len(got) != 0 || !more {
		t.Errorf("limit 0: %+v %v", got, more)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = open(t, file, 3)
	defer l.Close()
	got, _ = l.List(Filter{Owner: "alice"}, 10)
	if len(got) != 2 || got[1].Type != "sandbox.stopped" {
		t.Fatalf("after reopening: %+v", got)
	}
	if e := l.Append(Event{Type: "x", Owner: "alice"}); e.ID != 6 {
		t.Errorf("ids restart at %d after reopening, want 6", e.ID)
	}
}

func TestSubscribeMissesNothingAndCutsTheSlow(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.db"), 10000)
	defer l.Close()
	ctx := context.Background()
	first := l.Append(Event{Type: "a", Owner: "o"})
	l.Append(Event{Type: "b", Owner: "o"})
	past, sub := l.Subscribe(Filter{Owner: "o", After: first.ID})
	l.Append(Event{Type: "c", Owner: "o"})
	l.Append(Event{Type: "d", Owner: "other"})
	if len(past) != 1 || past[0].Type != "b" {
		t.Fatalf("past events after the first: %+v", past)
	}
	if e, err := sub.Next(ctx); err != nil || e.Type != "c" {
		t.Fatalf("live event %+v %v, want c", e, err)
	}
	sub.Close()
	if _, err := sub.Next(ctx); err != ErrClosed {
		t.Fatalf("Next after Close: %v", err)
	}

	// A subscriber that never takes is cut once its backlog would pass
	// its bound in events, or in bytes well before that for big events;
	// it resumes after the last event it took and gets the rest.
	for _, size := range []int{0, 64 << 10} {
		data := json.RawMessage(`"` + strings.Repeat("x", size) + `"`)
		from, cut := l.Last(), l.SubscribersCut()
		_, slow := l.Subscribe(Filter{Owner: "o", After: from})
		n := 0
		for l.SubscribersCut() == cut {
			if n++; n > SubscriberQueue+1 {
				t.Fatalf("events of %d bytes: a subscriber that never took was not cut after %d", size, n)
			}
			l.Append(Event{Type: "flood", Owner: "o", Data: data})
		}
		held := n - 1 // the event that cut it was not held
		if e := (Event{Type: "flood", Owner: "o", Data: data}); held > SubscriberQueue || held*Size(e) > SubscriberBytes {
			t.Errorf("events of %d bytes: cut after holding %d (%d bytes)", size, held, held*Size(e))
		}
		if size > 0 && held >= SubscriberQueue/2 {
			t.Errorf("events of %d bytes: %d held before the cut; the byte bound did not count", size, held)
		}
		if _, err := slow.Next(ctx); err != ErrFellBehind {
			t.Errorf("Next of a cut subscriber: %v", err)
		}
		past, again := l.Subscribe(Filter{Owner: "o", After: from})
		again.Close()
		if len(past) != n || past[0].ID != from+1 || past[n-1].ID != l.Last() {
			t.Errorf("resumed after %d: %d events, want %d from %d", from, len(past), n, from+1)
		}
	}
}

func TestOneOwnersFloodEvictsOnlyItsOwn(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.db"), 100)
	defer l.Close()
	for range 5 {
		l.Append(Event{Type: "sandbox.created", Owner: "alice"})
	}
	for range 1000 {
		l.Append(Event{Type: "custom.flood", Owner: "mallory"})
	}
	if got, _ := l.List(Filter{Owner: "alice"}, 10); len(got) != 5 {
		t.Errorf("alice keeps %d of her 5 events after mallory's flood", len(got))
	}
	if got, _ := l.List(Filter{Owner: "mallory"}, 1000); len(got) != 95 || got[94].ID != 1005 {
		t.Errorf("mallory keeps %d events, want her newest 95", len(got))
	}
}

// TestBoundsInBytesAndPerOwner: an owner over its quota drops its own
// oldest events; a full log drops those of the owner holding the most;
// the log's accounting is what it lists, and stays under the bounds, in
// memory and across a reopen with smaller ones.
func TestBoundsInBytesAndPerOwner(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.db")
	opts := Options{MaxCount: 10000, MaxBytes: 1 << 20, OwnerMaxCount: 50, OwnerMaxBytes: 256 << 10, MaxAge: time.Hour}
	l, err := Open(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 16<<10) + `"`)
	for range 10 {
		l.Append(Event{Type: "sandbox.created", Owner: "alice", Data: json.RawMessage(`{"n":1}`)})
	}
	for range 1000 {
		l.Append(Event{Type: "custom.flood", Owner: "mallory", Data: big})
	}
	if u := l.OwnerUsage("mallory"); u.Bytes > opts.OwnerMaxBytes || u.Count > opts.OwnerMaxCount || u.Count == 0 {
		t.Errorf("mallory's share after her flood: %+v", u)
	}
	for range 200 {
		l.Append(Event{Type: "custom.small", Owner: "mallory"})
	}
	if u := l.OwnerUsage("mallory"); u.Count != opts.OwnerMaxCount {
		t.Errorf("mallory's share after 200 small events: %+v, want %d events", u, opts.OwnerMaxCount)
	}
	// Ten owners each within their quota fill the log past its bytes.
	for i := range 10 {
		for range 15 {
			l.Append(Event{Type: "custom.fill", Owner: "owner" + strconv.Itoa(i), Data: big})
		}
	}
	check := func(when string) {
		t.Helper()
		u := l.Usage()
		if u.Bytes > opts.MaxBytes || u.Count > opts.MaxCount {
			t.Errorf("%s: the log holds %+v, over its bounds", when, u)
		}
		all, _ := l.List(Filter{AllOwners: true}, opts.MaxCount)
		sum := 0
		for i, e := range all {
			sum += Size(e)
			if i > 0 && e.ID <= all[i-1].ID {
				t.Fatalf("%s: an operator's list is out of order at %d: %d after %d", when, i, e.ID, all[i-1].ID)
			}
		}
		if len(all) != u.Count || sum != u.Bytes {
			t.Errorf("%s: the log counts %+v but lists %d events of %d bytes", when, u, len(all), sum)
		}
		if got, _ := l.List(Filter{Owner: "alice"}, 100); len(got) != 10 {
			t.Errorf("%s: alice keeps %d of her 10 events", when, len(got))
		}
	}
	check("in memory")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() > 4*int64(opts.MaxBytes) {
		t.Errorf("the file after writing %d MiB into a log of %d MiB: %v bytes (%v)", (1000+150)*16>>10, opts.MaxBytes>>20, fi.Size(), err)
	}
	l, err = Open(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	check("reopened")
	l.Close()

	// Smaller bounds at the next start drop the oldest, from the file too.
	l, err = Open(file, Options{MaxCount: 10000, OwnerMaxCount: 4, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := l.List(Filter{Owner: "alice"}, 100); len(got) != 4 || got[3].ID != 10 {
		t.Errorf("alice's events under a quota of 4: %+v", got)
	}
	l.Close()
	l = open(t, file, 10000)
	if got, _ := l.List(Filter{Owner: "alice"}, 100); len(got) != 4 {
		t.Errorf("alice's events after the smaller bound was lifted: %d, want the 4 kept", len(got))
	}
	last := l.Last()
	l.Close()

	// Every event expired: the ids still go on.
	time.Sleep(10 * time.Millisecond) // the events' age passes MaxAge below
	l, err = Open(file, Options{MaxCount: 10000, MaxAge: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, file, 10000)
	defer l.Close()
	if u := l.Usage(); u.Count != 0 || l.Last() != last {
		t.Errorf("after every event expired: %+v, last id %d, want none and %d", u, l.Last(), last)
	}
}

// TestALargeFileIsCompacted: a file written under larger bounds (or by a
// hutch without them) is brought under the ceiling when the log opens,
// keeping what the bounds admit.
func TestALargeFileIsCompacted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.db")
	l, err := Open(file, Options{MaxCount: 100000, MaxBytes: 256 << 20, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 60<<10) + `"`)
	for range 600 { // 36 MiB
		l.Append(Event{Type: "custom.big", Owner: "o", Data: big})
	}
	last := l.Append(Event{Type: "custom.last", Owner: "o"})
	l.Close()
	before, _ := os.Stat(file)
	const bound = 1 << 20
	if before.Size() <= fileCeiling(bound) {
		t.Fatalf("the file before: %d bytes, not past the ceiling of %d", before.Size(), fileCeiling(bound))
	}
	l, err = Open(file, Options{MaxCount: 100000, MaxBytes: bound, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	after, _ := os.Stat(file)
	got, _ := l.List(Filter{Owner: "o"}, 100)
	if after.Size() > fileCeiling(bound) || len(got) == 0 || got[len(got)-1].ID != last.ID || l.Usage().Bytes > bound {
		t.Errorf("reopened under %d bytes: the file went from %d to %d bytes; %d events kept (%+v)", bound, before.Size(), after.Size(), len(got), l.Usage())
	}
	if e := l.Append(Event{Type: "x", Owner: "o"}); e.ID != last.ID+1 {
		t.Errorf("ids go on at %d after the compaction, want %d", e.ID, last.ID+1)
	}
}

// TestOneOwnersSubscribersShareItsQuota: many subscribers of one owner
// that never take hold, together, no more than the owner's byte quota;
// an operator's subscriber is not cut for them.
func TestOneOwnersSubscribersShareItsQuota(t *testing.T) {
	const quota = 4 << 20
	l, err := Open(filepath.Join(t.TempDir(), "events.db"), Options{MaxCount: 10000, OwnerMaxBytes: quota, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var subs []*Subscription
	for range 20 {
		_, s := l.Subscribe(Filter{Owner: "mallory"})
		subs = append(subs, s)
	}
	_, hook := l.Subscribe(Filter{AllOwners: true})
	_, reader := l.Subscribe(Filter{Owner: "mallory"}) // takes each event
	e := Event{Type: "custom.big", Owner: "mallory", Data: json.RawMessage(`"` + strings.Repeat("x", 60<<10) + `"`)}
	for i := range SubscriberBytes / Size(e) {
		l.Append(e)
		if _, err := reader.Next(context.Background()); err != nil {
			t.Fatalf("event %d: a subscriber that takes every event: %v", i, err)
		}
	}
	held := 0
	for _, s := range subs {
		l.mu.Lock()
		held += s.bytes
		l.mu.Unlock()
	}
	if held > quota || l.SubscribersCut() < uint64(len(subs)-quota/SubscriberBytes) {
		t.Errorf("20 subscribers that never took hold %d bytes (quota %d); %d were cut", held, quota, l.SubscribersCut())
	}
	if ev, err := hook.Next(context.Background()); err != nil || ev.Type != "custom.big" {
		t.Errorf("an operator's subscriber: %v %v", ev.Type, err)
	}
}
