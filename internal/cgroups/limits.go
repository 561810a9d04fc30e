package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Limits are resource limits of a cgroup that SetLimits changes; a zero
// field leaves that limit as it is.
type Limits struct {
	// MemoryBytes is the memory limit. Swap is not allowed: memory+swap
	// (v1) is set to the same value, swap (v2) to 0.
	MemoryBytes int64
	// CPUQuotaUs of every CPUPeriodUs is the CPU time the cgroup may use.
	CPUQuotaUs  int64
	CPUPeriodUs uint64
	// Pids is the most tasks (processes and threads) of the cgroup.
	Pids int64
}

// SetLimits changes the limits of the existing cgroup rel, the way runc and
// runsc update a running container: it writes the cgroup's files directly.
// Lowering memory below what the cgroup uses fails (v1: EBUSY) or makes
// the kernel reclaim and, failing that, OOM-kill (v2).
func (l Layout) SetLimits(rel string, lim Limits) error {
	if clean(rel) == "" {
		return fmt.Errorf("setting limits of cgroup %q: refusing to change a hierarchy root", rel)
	}
	if lim.MemoryBytes > 0 {
		if err := l.setMemory(rel, lim.MemoryBytes); err != nil {
			return fmt.Errorf("setting memory limit of cgroup %s: %w", rel, err)
		}
	}
	if lim.CPUQuotaUs > 0 && lim.CPUPeriodUs > 0 {
		if err := l.setCPU(rel, lim.CPUQuotaUs, lim.CPUPeriodUs); err != nil {
			return fmt.Errorf("setting cpu limit of cgroup %s: %w", rel, err)
		}
	}
	if lim.Pids > 0 {
		if err := l.setPids(rel, lim.Pids); err != nil {
			return fmt.Errorf("setting pids limit of cgroup %s: %w", rel, err)
		}
	}
	return nil
}

func (l Layout) setMemory(rel string, limit int64) error {
	v := strconv.FormatInt(limit, 10)
	if l.V2 {
		dir := l.Path("", rel)
		if err := writeFile(dir, "memory.max", v); err != nil {
			return err
		}
		return writeOptional(dir, "memory.swap.max", "0")
	}
	dir := l.Path("memory", rel)
	// memory.memsw.limit_in_bytes may never be below memory.limit_in_bytes:
	// lowering sets the memory limit first, raising sets memsw first.
	cur, err := readUint(filepath.Join(dir, "memory.limit_in_bytes"))
	if err != nil {
		return err
	}
	if uint64(limit) < cur {
		if err := writeFile(dir, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		return writeOptional(dir, "memory.memsw.limit_in_bytes", v)
	}
	if err := writeOptional(dir, "memory.memsw.limit_in_bytes", v); err != nil {
		return err
	}
	return writeFile(dir, "memory.limit_in_bytes", v)
}

func (l Layout) setCPU(rel string, quota int64, period uint64) error {
	if l.V2 {
		return writeFile(l.Path("", rel), "cpu.max", fmt.Sprintf("%d %d", quota, period))
	}
	dir := l.Path("cpu", rel)
	if err := writeFile(dir, "cpu.cfs_period_us", strconv.FormatUint(period, 10)); err != nil {
		return err
	}
	return writeFile(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

// writeFile writes value to the cgroup file dir/name, which must exist
// (a cgroup's files are created by the kernel, never by a write).
func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return fmt.Errorf("writing %s to %s: %w", value, f.Name(), err)
	}
	return f.Close()
}

// writeOptional is writeFile for a file the kernel may not offer (swap
// accounting off): a missing file is not an error.
func writeOptional(dir, name, value string) error {
	err := writeFile(dir, name, value)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
