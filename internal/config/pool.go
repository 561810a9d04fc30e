package config

import (
	"fmt"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Defaults of the automatic warm pool.
const (
	// DefaultWarmPoolMax bounds one image's automatic pool.
	DefaultWarmPoolMax = 8
	// DefaultWarmPoolMemoryMB bounds the host memory of all automatic
	// pools: about ten idle sandboxes (poolplan.SandboxCostMB each).
	DefaultWarmPoolMemoryMB = 256
	// MaxBoots bounds max_concurrent_boots.
	MaxBoots = 1024
)

// emptyWarmPool turns the automatic pool off when the file says
// `warm_pool: {}`: an empty map is an answer, unlike an absent key. node
// is the mapping of config keys.
func (c *Config) emptyWarmPool(node *yaml.Node) error {
	v := mappingValue(node, "warm_pool")
	if v == nil || v.Kind != yaml.MappingNode || len(v.Content) > 0 {
		return nil
	}
	if auto := mappingValue(node, "warm_pool_auto"); auto != nil && c.WarmPoolAuto {
		return fmt.Errorf("line %d: warm_pool: {} turns the warm pool off, and warm_pool_auto: true asks for it; keep one", v.Line)
	}
	c.WarmPoolAuto = false
	return nil
}

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
	if c.WarmPoolMax < 1 || c.WarmPoolMax > 10_000 {
		bad("warm_pool_max must be between 1 and 10000, got %d", c.WarmPoolMax)
	}
	if c.WarmPoolMemoryMB < 0 || c.WarmPoolMemoryMB > 1<<20 {
		bad("warm_pool_memory_mb must be between 0 and 1048576, got %d", c.WarmPoolMemoryMB)
	}
	if c.MaxConcurrentBoots < 0 || c.MaxConcurrentBoots > MaxBoots {
		bad("max_concurrent_boots must be between 0 (the host's CPUs) and %d, got %d", MaxBoots, c.MaxConcurrentBoots)
	}
	return errs
}
