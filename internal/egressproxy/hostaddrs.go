package egressproxy

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
)

// hostAddrs answers whether an address is one of the host's without a
// dump of every interface per connection (a netlink round trip that grows
// with the sandboxes' interfaces): it keeps the set and reads it again
// after the kernel announces any address change. Without the
// announcements (no subscription, or it failed), every question reads the
// interfaces.
type hostAddrs struct {
	watching atomic.Bool
	done     chan struct{}

	mu    sync.Mutex
	set   map[netip.Addr]bool // guarded by mu
	stale bool                // guarded by mu
}

func newHostAddrs() *hostAddrs {
	h := &hostAddrs{done: make(chan struct{}), stale: true}
	updates := make(chan netlink.AddrUpdate, 64)
	err := netlink.AddrSubscribeWithOptions(updates, h.done, netlink.AddrSubscribeOptions{
		ErrorCallback: func(error) { h.markStale() },
	})
	if err != nil {
		return h
	}
	h.watching.Store(true)
	go func() {
		for range updates {
			h.markStale()
		}
		// The subscription ended (closed, or lost messages): no cache.
		h.watching.Store(false)
	}()
	return h
}

func (h *hostAddrs) markStale() {
	h.mu.Lock()
	h.stale = true
	h.mu.Unlock()
}

// has reports whether a is one of the host's addresses; true when they
// cannot be read.
func (h *hostAddrs) has(a netip.Addr) bool {
	if !h.watching.Load() {
		set, ok := readHostAddrs()
		return !ok || set[a]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stale {
		// A change announced during the read waits for mu, then marks
		// this set stale.
		set, ok := readHostAddrs()
		if !ok {
			return true
		}
		h.set, h.stale = set, false
	}
	return h.set[a]
}

func (h *hostAddrs) close() { close(h.done) }

// readHostAddrs lists the host's addresses.
func readHostAddrs() (map[netip.Addr]bool, bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, false
	}
	set := make(map[netip.Addr]bool, len(addrs))
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				set[a.Unmap()] = true
			}
		}
	}
	return set, true
}
