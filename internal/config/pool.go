package config

import (
	"fmt"
	"slices"
	"sort"
)

// validateWarmPool checks warm_pool: every key is a catalog image the
// allowlist admits (a pool of anything else could never be used), every
// count is at least 0, and the pool fits in max_concurrent_sandboxes.
func (c *Config) validateWarmPool() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := make([]string, 0, len(c.WarmPool))
	for name := range c.WarmPool {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		n := c.WarmPool[name]
		switch {
		case !c.inCatalog(name):
			bad("warm_pool.%s %s", name, notInCatalog)
		case !slices.Contains(c.ImageAllowlist, name):
			bad("warm_pool.%s: image_allowlist does not allow %s, so no create could take from its pool", name, name)
		}
		if n < 0 {
			bad("warm_pool.%s must be at least 0, got %d", name, n)
			continue
		}
		total += n
	}
	if total > c.MaxConcurrentSandboxes {
		bad("warm_pool keeps %d sandboxes ready, more than max_concurrent_sandboxes (%d) allows; pool sandboxes count toward it", total, c.MaxConcurrentSandboxes)
	}
	return errs
}
