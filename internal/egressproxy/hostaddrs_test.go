package egressproxy

import (
	"net/netip"
	"testing"
)

// TestHostAddrs: the host's loopback address is one of its own and a
// documentation address is not, from the kept set and after it is marked
// stale (an announced change), which reads the interfaces again.
func TestHostAddrs(t *testing.T) {
	h := newHostAddrs()
	defer h.close()
	lo, doc := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.0.2.77")
	for range 2 {
		if !h.has(lo) || h.has(doc) {
			t.Fatalf("127.0.0.1: %v, 192.0.2.77: %v", h.has(lo), h.has(doc))
		}
		h.mu.Lock()
		kept := h.set
		h.mu.Unlock()
		if h.watching.Load() && !kept[lo] {
			t.Fatalf("watching, but the set is not kept: %v", kept)
		}
		h.markStale()
	}
}
