package spec

import (
	"fmt"
	"math"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// CheckExecTimeout refuses an exec's timeout_ms over limit,
// max_exec_timeout_ms (S001 naming the cap), rather than cutting the exec
// short at the cap.
func CheckExecTimeout(ms, limit uint64) error {
	if ms <= limit {
		return nil
	}
	return errdefs.Malformed("timeout_ms %d (%s) is over this daemon's max_exec_timeout_ms, %d (%s)",
		ms, msDuration(ms), limit, msDuration(limit)).
		WithFix(map[string]any{"timeout_ms": limit}, fmt.Sprintf("ask for at most %s (raise max_exec_timeout_ms in the daemon's config for more), or run the command as a background process", msDuration(limit)))
}

// msDuration writes ms milliseconds as a duration ("2s", "5m0s").
func msDuration(ms uint64) time.Duration {
	return time.Duration(min(ms, uint64(math.MaxInt64/int64(time.Millisecond)))) * time.Millisecond
}

// ExecTimeout is an exec's timeout: the request's ms or the default def,
// at most maxMs.
func ExecTimeout(ms, def, maxMs uint64) uint64 {
	if ms == 0 {
		ms = def
	}
	return min(ms, maxMs)
}
