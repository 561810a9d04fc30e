package runtime

// Resizer is an optional Instance capability: changing the CPU and memory
// limits of a running sandbox, as when a warm-pool sandbox booted with the
// default limits is claimed by a create that asks for less. A zero value
// leaves that limit as it is. The sandbox's own view of its resources
// (CPU count, MemTotal) stays what it was at boot; the host enforces the
// new limits.
type Resizer interface {
	Resize(cpus, memoryMB uint32) error
}
