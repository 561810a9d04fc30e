package runtime

import (
	"slices"
	"strings"
	"sync"

	"github.com/hutch-dev/hutch/internal/safetext"
)

// TailBuffer is an io.Writer that keeps only the last bytes written: a
// sandbox's stderr or a VM's console, for StderrTail and boot errors. It is
// safe for concurrent use.
type TailBuffer struct {
	size int

	mu sync.Mutex
	// buf is guarded by mu.
	buf []byte
}

// NewTailBuffer keeps the last size bytes.
func NewTailBuffer(size int) *TailBuffer { return &TailBuffer{size: size} }

// Write keeps the tail of p; it never fails.
func (t *TailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.size {
		p = p[len(p)-t.size:]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if over := len(t.buf) + len(p) - t.size; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept bytes.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// LastLines returns at most n non-empty lines from the end of s, joined by
// " | ", escaped and cut to max bytes, for one-line error messages: s is
// what a sandbox wrote, so it may hold terminal escapes.
func LastLines(s string, n, max int) string {
	var keep []string
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, l)
		}
	}
	slices.Reverse(keep)
	return safetext.Tail(strings.Join(keep, " | "), max)
}
