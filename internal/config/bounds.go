package config

import "fmt"

// Bounds of a sandbox's resources, for default_cpus and default_memory_mb
// and for every create request (the manager checks them with CheckCPUs and
// CheckMemoryMB).
const (
	MinCPUs     = 1
	MaxCPUs     = 256
	MinMemoryMB = 32
	MaxMemoryMB = 1 << 20
)

// CheckCPUs says why cpus is out of bounds, naming the key "cpus".
func CheckCPUs(cpus uint32) error {
	if cpus < MinCPUs || cpus > MaxCPUs {
		return fmt.Errorf("cpus must be between %d and %d, got %d", MinCPUs, MaxCPUs, cpus)
	}
	return nil
}

// CheckMemoryMB says why mb is out of bounds, naming the key "memory_mb".
func CheckMemoryMB(mb uint32) error {
	if mb < MinMemoryMB || mb > MaxMemoryMB {
		return fmt.Errorf("memory_mb must be between %d and %d, got %d", MinMemoryMB, MaxMemoryMB, mb)
	}
	return nil
}
