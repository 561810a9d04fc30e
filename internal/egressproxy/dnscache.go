package egressproxy

import (
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Bounds of the proxy's cache of its resolver's answers: the names kept,
// and the longest an answer is kept whatever its TTL.
const (
	maxCachedNames = 4096
	maxCacheTTL    = 5 * time.Minute
)

// lookupCache keeps the resolver's answers per name and upstream
// nameservers for their TTL (at most maxCacheTTL), so that a sandbox's
// repeated connections to a host do not each wait for a DNS round trip;
// sandboxes with different upstreams never share an answer. Failures are
// not kept. It holds at most maxCachedNames names: when full, expired
// ones go first, then any one.
type lookupCache struct {
	r   Resolver
	now func() time.Time

	mu    sync.Mutex
	names map[string]cachedAnswer // guarded by mu
}

// cachedAnswer is one name's answer and when it expires.
type cachedAnswer struct {
	addrs   []netip.Addr
	expires time.Time
}

func newLookupCache(r Resolver) *lookupCache {
	return &lookupCache{r: r, now: time.Now, names: map[string]cachedAnswer{}}
}

// lookup answers name, asked of upstreams, from the cache or, when it has
// no live answer, from the resolver.
func (c *lookupCache) lookup(name string, upstreams []string) ([]netip.Addr, error) {
	key := strings.Join(upstreams, ",") + " " + strings.ToLower(strings.TrimSuffix(name, "."))
	c.mu.Lock()
	a, ok := c.names[key]
	c.mu.Unlock()
	if ok && c.now().Before(a.expires) {
		return a.addrs, nil
	}
	addrs, ttl, err := c.r.Lookup(name, upstreams)
	if err != nil || ttl <= 0 {
		return addrs, err
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) >= maxCachedNames {
		c.evictLocked(now)
	}
	c.names[key] = cachedAnswer{addrs: addrs, expires: now.Add(min(ttl, maxCacheTTL))}
	return addrs, nil
}

// evictLocked drops the expired answers, or one answer if none has
// expired. c.mu must be held.
func (c *lookupCache) evictLocked(now time.Time) {
	n := len(c.names)
	for k, a := range c.names {
		if !now.Before(a.expires) {
			delete(c.names, k)
		}
	}
	if len(c.names) < n {
		return
	}
	for k := range c.names {
		delete(c.names, k)
		return
	}
}
