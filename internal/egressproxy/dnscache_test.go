package egressproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// countingResolver answers every name with one address and ttl, counting
// the lookups per name (and first upstream, if any); names in fail fail.
type countingResolver struct {
	ttl   time.Duration
	calls map[string]int
	fail  map[string]bool
}

func (r *countingResolver) Lookup(name string, upstreams []string) ([]netip.Addr, time.Duration, error) {
	key := name
	if len(upstreams) > 0 {
		key = upstreams[0] + " " + name
	}
	r.calls[key]++
	if r.fail[name] {
		return nil, 0, errors.New("NXDOMAIN")
	}
	return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, r.ttl, nil
}

// TestLookupCache: an answer is kept per name for its TTL (case and a
// final dot aside) and upstreams, at most maxCacheTTL; failures and TTL 0
// are not kept; the cache holds at most maxCachedNames names.
func TestLookupCache(t *testing.T) {
	r := &countingResolver{ttl: 30 * time.Second, calls: map[string]int{}, fail: map[string]bool{"bad.test": true}}
	c := newLookupCache(r)
	now := time.Unix(1_000_000, 0)
	c.now = func() time.Time { return now }
	lookup := func(name string) {
		t.Helper()
		if _, err := c.lookup(name, nil); err != nil && !r.fail[name] {
			t.Fatalf("lookup(%q): %v", name, err)
		}
	}
	lookup("a.test")
	lookup("A.test.")
	lookup("b.test")
	if r.calls["a.test"] != 1 || r.calls["b.test"] != 1 {
		t.Errorf("within the TTL: lookups %v", r.calls)
	}
	// Another sandbox's upstreams are asked, not answered from the cache.
	for range 2 {
		if _, err := c.lookup("a.test", []string{"192.0.2.53:53"}); err != nil {
			t.Fatal(err)
		}
	}
	if r.calls["192.0.2.53:53 a.test"] != 1 {
		t.Errorf("lookups of a.test at other upstreams %d, want 1", r.calls["192.0.2.53:53 a.test"])
	}
	now = now.Add(30 * time.Second)
	lookup("a.test")
	if r.calls["a.test"] != 2 {
		t.Errorf("past the TTL, %d lookups of a.test, want 2", r.calls["a.test"])
	}
	lookup("bad.test")
	lookup("bad.test")
	if r.calls["bad.test"] != 2 {
		t.Errorf("a failure was kept: %d lookups", r.calls["bad.test"])
	}
	r.ttl = 0
	lookup("zero.test")
	lookup("zero.test")
	if r.calls["zero.test"] != 2 {
		t.Errorf("a TTL 0 answer was kept: %d lookups", r.calls["zero.test"])
	}
	r.ttl = 24 * time.Hour
	lookup("long.test")
	now = now.Add(maxCacheTTL)
	lookup("long.test")
	if r.calls["long.test"] != 2 {
		t.Errorf("kept past maxCacheTTL: %d lookups", r.calls["long.test"])
	}
	for i := range maxCachedNames + 10 {
		lookup(fmt.Sprintf("n%d.test", i))
	}
	if n := len(c.names); n > maxCachedNames {
		t.Errorf("%d names cached, bound %d", n, maxCachedNames)
	}
}
