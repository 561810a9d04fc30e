package microvm

import (
	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// QEMU runs in a host cgroup of its own, hutch/<id> as runsc makes for a
// gVisor sandbox, with memory (no swap), cpu and pids limits (issue 38: 5):
// the guest's own limits hold inside the VM, these hold QEMU itself.

// qemuOverheadMB is the memory QEMU may use beyond its guest's: its own
// code and heap, the devices' buffers and, under TCG, the translation
// cache (tb-size=64).
const qemuOverheadMB = 256

// qemuTasks is the most tasks QEMU may have besides one per vCPU: its main
// loop, RCU and signal threads, and its block I/O worker pool (up to 64).
const qemuTasks = 96

// cpuPeriodUs is the CFS period of the cpu limit, runc's and runsc's.
const cpuPeriodUs = 100_000

// cgroupRel is the cgroup of sandbox id's QEMU.
func cgroupRel(id string) string { return "hutch/" + id }

// qemuLimits are the limits of the cgroup of spec's QEMU.
func qemuLimits(spec runtime.Spec) cgroups.Limits {
	cpus := int64(max(spec.CPUs, 1))
	return cgroups.Limits{
		MemoryBytes: int64(max(spec.MemoryMB, minMemoryMB)+qemuOverheadMB) << 20,
		CPUQuotaUs:  cpus * cpuPeriodUs,
		CPUPeriodUs: cpuPeriodUs,
		Pids:        qemuTasks + cpus,
	}
}
