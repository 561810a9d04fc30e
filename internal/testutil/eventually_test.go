package testutil

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
)

// TestPoll: cond is called until it holds, and at least once however
// short the timeout; a cond that never holds ends the poll with false.
func TestPoll(t *testing.T) {
	calls := 0
	if !Poll(time.Minute, func() bool { calls++; return calls == 3 }) || calls != 3 {
		t.Errorf("a cond true on its third call: %d calls", calls)
	}
	calls = 0
	if Poll(0, func() bool { calls++; return false }) || calls != 1 {
		t.Errorf("a false cond with no time left: %d calls, want 1 and false", calls)
	}
	calls = 0
	if !Poll(0, func() bool { calls++; return true }) || calls != 1 {
		t.Errorf("a true cond with no time left: %d calls, want 1 and true", calls)
	}
	calls = 0
	if Poll(20*time.Millisecond, func() bool { calls++; return false }) || calls < 2 {
		t.Errorf("a cond that never holds: %d calls, want false after more than one", calls)
	}
}

// TestEventually: Eventually and EventuallyNil return quietly once cond
// holds, and otherwise fail the test saying what was awaited (and the
// last error).
func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, time.Minute, func() bool { calls++; return calls == 2 }, "the second call")
	EventuallyNil(t, time.Minute, func() error {
		if calls++; calls < 4 {
			return errors.New("not yet")
		}
		return nil
	}, "the fourth call")

	if msg := fatalOf(func(tb testing.TB) {
		Eventually(tb, 0, func() bool { return false }, "sandbox %s stops", "x")
	}); !strings.HasPrefix(msg, "sandbox x stops: not within") {
		t.Errorf("Eventually failed with %q", msg)
	}
	n := 0
	if msg := fatalOf(func(tb testing.TB) {
		EventuallyNil(tb, 10*time.Millisecond, func() error { n++; return fmt.Errorf("attempt %d", n) }, "dial")
	}); !strings.HasPrefix(msg, "dial: not within") || !strings.HasSuffix(msg, fmt.Sprintf("attempt %d", n)) {
		t.Errorf("EventuallyNil failed with %q after %d attempts", msg, n)
	}
}

// fatalOf runs f with a testing.TB whose Fatalf ends f, and returns the
// message of that failure ("" when f did not fail).
func fatalOf(f func(testing.TB)) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	goruntime.Goexit()
}
