package microvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hutch-dev/hutch/internal/runtime"
)

var _ runtime.StatsReader = (*instance)(nil)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux architecture hutch runs on).
const clockTicks = 100

// Stats is what the VM costs the host, read from its QEMU process: CPU
// time (the guest's and the emulation's), resident memory, and the host
// space its writable disk takes. Pids is 0: the tasks inside are the
// guest kernel's.
func (i *instance) Stats() (runtime.Stats, error) {
	pid := i.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("reading qemu's stat: %w", err)
	}
	cpu, err := cpuSeconds(string(stat))
	if err != nil {
		return runtime.Stats{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("reading qemu's status: %w", err)
	}
	s := runtime.Stats{CPUSeconds: cpu, MemoryBytes: rssBytes(string(status))}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(i.dir, rwDiskName), &st); err == nil {
		s.DiskBytes = uint64(st.Blocks) * 512
	}
	return s, nil
}

// cpuSeconds is the user plus system time in a /proc/<pid>/stat line.
func cpuSeconds(stat string) (float64, error) {
	// Fields after the command name (which may hold spaces) in parentheses:
	// state is field 3, utime 14 and stime 15.
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("bad /proc stat line")
	}
	f := strings.Fields(stat[end+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat line")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("bad /proc stat line: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// rssBytes is VmRSS from a /proc/<pid>/status, or 0.
func rssBytes(status string) uint64 {
	for _, line := range strings.Split(status, "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
