package spec

import (
	goruntime "runtime"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Limits resolves a create's cpus and memory against cfg's defaults,
// sanity bounds (S001), the host's CPUs and memory (S400, for what the
// request asks; defaults are the operator's) and per-image caps (S400).
func Limits(cfg config.Config, req api.CreateRequest) (cpus, mem uint32, err error) {
	cpus, mem = req.CPUs, req.MemoryMB
	if cpus == 0 {
		cpus = cfg.DefaultCPUs
	}
	if mem == 0 {
		mem = cfg.DefaultMemoryMB
	}
	if err := config.CheckCPUs(cpus); err != nil {
		return 0, 0, errdefs.Malformed("%v", err)
	}
	if err := config.CheckMemoryMB(mem); err != nil {
		return 0, 0, errdefs.Malformed("%v", err)
	}
	hostCPUs, hostMB := HostCapacity()
	if req.CPUs > 0 && int(req.CPUs) > hostCPUs {
		return 0, 0, errdefs.New(errdefs.CodeCapacity, "cpus %d is more than the %d CPUs this host has", req.CPUs, hostCPUs).
			WithFix(map[string]any{"cpus": hostCPUs}, "ask for at most the host's CPUs")
	}
	if req.MemoryMB > 0 && uint64(req.MemoryMB) > hostMB {
		return 0, 0, errdefs.New(errdefs.CodeCapacity, "memory_mb %d is more than the %d MiB of memory this host has", req.MemoryMB, hostMB).
			WithFix(map[string]any{"memory_mb": hostMB}, "ask for at most the host's memory")
	}
	if caps, ok := cfg.PerImageCaps[req.Image]; ok {
		if caps.MaxCPUs > 0 && cpus > caps.MaxCPUs {
			return 0, 0, errdefs.New(errdefs.CodeCapacity, "cpus %d is over the cap of %d for image %s", cpus, caps.MaxCPUs, req.Image).
				WithFix(map[string]any{"cpus": caps.MaxCPUs}, "lower cpus or raise per_image_caps")
		}
		if caps.MaxMemoryMB > 0 && mem > caps.MaxMemoryMB {
			return 0, 0, errdefs.New(errdefs.CodeCapacity, "memory_mb %d is over the cap of %d for image %s", mem, caps.MaxMemoryMB, req.Image).
				WithFix(map[string]any{"memory_mb": caps.MaxMemoryMB}, "lower memory_mb or raise per_image_caps")
		}
	}
	return cpus, mem, nil
}

// HostCapacity is what the host has for sandboxes: the CPUs this process
// may run on and the memory in MiB (the most when sysinfo fails).
func HostCapacity() (cpus int, memoryMB uint64) {
	memoryMB = config.MaxMemoryMB
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		memoryMB = uint64(si.Totalram) * uint64(si.Unit) >> 20
	}
	return goruntime.NumCPU(), memoryMB
}
