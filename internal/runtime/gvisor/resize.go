package gvisor

import (
	"fmt"

	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/runtime"
)

var _ runtime.Resizer = (*instance)(nil)

// Resize writes new limits into the sandbox's cgroups, where runsc put the
// boot-time ones (spec.go, resources). It is what `runsc update` does,
// without starting a runsc process. A later out-of-memory end names the
// new memory limit.
func (i *instance) Resize(cpus, memoryMB uint32) error {
	var lim cgroups.Limits
	if memoryMB > 0 {
		lim.MemoryBytes = int64(memoryMB) << 20
	}
	if cpus > 0 {
		lim.CPUQuotaUs, lim.CPUPeriodUs = int64(cpus)*cpuPeriod, cpuPeriod
	}
	if err := i.rt.cg.SetLimits(cgroupRel(i.id), lim); err != nil {
		return fmt.Errorf("resizing sandbox %s: %w", i.id, err)
	}
	if memoryMB > 0 {
		i.mu.Lock()
		i.memoryMB = memoryMB
		i.mu.Unlock()
	}
	return nil
}
