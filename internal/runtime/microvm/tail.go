package microvm

import (
	"strings"
	"sync"
)

// consoleTailSize is how much of a VM's console (kernel and agent logs)
// an instance keeps.
const consoleTailSize = 8 << 10

// tailBuffer keeps the last bytes written to it. It is safe for concurrent
// use.
type tailBuffer struct {
	size int
	mu   sync.Mutex
	// buf is guarded by mu.
	buf []byte
}

func newTailBuffer(size int) *tailBuffer { return &tailBuffer{size: size} }

// Write keeps the last size bytes of everything written.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.size; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what the buffer holds.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLine is the last non-empty line of s, trimmed to 256 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r", "")), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 256 {
		l = l[:256]
	}
	return l
}
