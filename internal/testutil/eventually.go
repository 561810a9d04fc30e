package testutil

import (
	"fmt"
	"testing"
	"time"
)

// Poll calls cond until it returns true or timeout has passed, and reports
// whether it held. It waits a little longer between calls each time (1 ms
// up to 100 ms), and calls cond once more after a wait that ran past the
// deadline, so a slow host shortens no condition's chance. Tests that
// report a failure of their own use it; the others use Eventually.
//
// It is the one poll-until-deadline loop of hutch's tests: a test waits
// for a condition, never for a duration it guesses.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(wait, max(time.Until(deadline), 0)))
	}
}

// Eventually fails t unless cond holds within timeout; format and args
// say what was awaited.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("%s: not within %v", fmt.Sprintf(format, args...), timeout)
	}
}

// EventuallyNil fails t unless cond returns nil within timeout, with the
// last error it returned.
func EventuallyNil(t testing.TB, timeout time.Duration, cond func() error, format string, args ...any) {
	t.Helper()
	var err error
	if !Poll(timeout, func() bool { err = cond(); return err == nil }) {
		t.Fatalf("%s: not within %v: %v", fmt.Sprintf(format, args...), timeout, err)
	}
}
