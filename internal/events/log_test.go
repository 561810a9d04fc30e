package events

import (
	"path/filepath"
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

func TestSubscribeMissesNothingAndDropsTheSlow(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.db"), 10000)
	defer l.Close()
	first := l.Append(Event{Type: "a", Owner: "o"})
	l.Append(Event{Type: "b", Owner: "o"})
	past, sub := l.Subscribe(Filter{Owner: "o", After: first.ID})
	defer sub.Close()
	l.Append(Event{Type: "c", Owner: "o"})
	l.Append(Event{Type: "d", Owner: "other"})
	if len(past) != 1 || past[0].Type != "b" {
		t.Fatalf("past events after the first: %+v", past)
	}
	if e := <-sub.C(); e.Type != "c" {
		t.Fatalf("live event %+v, want c", e)
	}

	slow := func() *Subscription { _, s := l.Subscribe(Filter{Owner: "o"}); return s }()
	for range subscriberQueue + 1 {
		l.Append(Event{Type: "flood", Owner: "o"})
	}
	n := 0
	for range slow.C() {
		n++
	}
	if n != subscriberQueue {
		t.Errorf("a subscriber that never read got %d events before it was dropped, want %d", n, subscriberQueue)
	}
}
