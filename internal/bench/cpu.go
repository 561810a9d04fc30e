package bench

// CPU accounting of the throughput scenarios: the host CPU time each exec
// cost while the scenario ran, split by the kind of process that spent it
// (gVisor's Sentry and its systrap stubs, the hutch daemon, the benchmark
// itself, Docker's daemons and shims). It reads /proc, so it is only
// meaningful with the daemon on this machine.

import (
	"cmp"
	"os"
	"slices"
	"strings"
	"time"
)

// clockTicks is the unit of CPU times in /proc/<pid>/stat (USER_HZ, which
// Linux fixes at 100 for user space).
const clockTicks = 100

// Process classes of the CPU accounting.
const (
	classSentry = "gVisor Sentry (runsc-sandbox)"
	classStubs  = "gVisor systrap stubs (the sandboxed processes)"
	classGofer  = "gVisor gofer"
	classRunsc  = "runsc commands (boots and teardowns under way)"
	classDaemon = "hutch daemon"
	classBench  = "hutch bench (the client)"
	classDocker = "Docker (dockerd, containerd, shims, runc)"
	classKernel = "kernel threads"
	classOther  = "other processes"
)

// CPUShare is the CPU time one class of processes spent per exec.
type CPUShare struct {
	Class     string  `json:"class"`
	MsPerExec float64 `json:"ms_per_exec"`
}

// snapshotCPU reads the CPU time of every process; nil (when /proc
// cannot be read) makes cpuPerExec return nothing.
func snapshotCPU() map[int]process {
	procs, err := processes()
	if err != nil {
		return nil
	}
	return procs
}

// cpuPerExec splits the CPU time spent between before and after by
// process class, per exec, largest first, with the host's total last. A
// process that exited meanwhile counts in its parent once reaped, except
// when PID 1 reaps it: init reaps every orphan on the machine (the
// sandboxes of earlier scenarios among them), with their whole lives' CPU.
// A process that started meanwhile counts whole.
func cpuPerExec(before, after map[int]process, execs int) []CPUShare {
	if before == nil || after == nil || execs == 0 {
		return nil
	}
	accounted := func(pid int, p process) uint64 {
		if pid == 1 {
			return p.ticks
		}
		return p.ticks + p.childTicks
	}
	self := os.Getpid()
	byClass := map[string]uint64{}
	var total uint64
	for pid, p := range after {
		spent := accounted(pid, p)
		if b, ok := before[pid]; ok && b.cmdline == p.cmdline {
			spent -= min(spent, accounted(pid, b))
		}
		if spent == 0 {
			continue
		}
		byClass[classify(pid, self, after)] += spent
		total += spent
	}
	perExec := func(ticks uint64) float64 {
		return float64(ticks) * float64(time.Second/clockTicks) / float64(time.Millisecond) / float64(execs)
	}
	var out []CPUShare
	for class, ticks := range byClass {
		out = append(out, CPUShare{Class: class, MsPerExec: perExec(ticks)})
	}
	slices.SortFunc(out, func(a, b CPUShare) int {
		if c := cmp.Compare(b.MsPerExec, a.MsPerExec); c != 0 {
			return c
		}
		return strings.Compare(a.Class, b.Class)
	})
	return append(out, CPUShare{Class: "total", MsPerExec: perExec(total)})
}

// classify names the class of process pid. gVisor's stubs have no
// command line; they descend from a runsc-sandbox process.
func classify(pid, self int, all map[int]process) string {
	p := all[pid]
	switch cmd := p.cmdline; {
	case pid == self:
		return classBench
	case pid == 2 || p.ppid == 2:
		return classKernel
	case strings.HasPrefix(cmd, "runsc-sandbox "):
		return classSentry
	case strings.HasPrefix(cmd, "runsc-gofer "):
		return classGofer
	case cmd == "":
		for q, seen := p.ppid, 0; q > 1 && seen < 64; q, seen = all[q].ppid, seen+1 {
			if strings.HasPrefix(all[q].cmdline, "runsc-sandbox ") {
				return classStubs
			}
		}
		return classOther
	case isHutchServe(cmd):
		return classDaemon
	case isRunsc(cmd):
		return classRunsc
	case isDocker(cmd):
		return classDocker
	}
	return classOther
}

// isHutchServe tells an `hutch serve` command line.
func isHutchServe(cmd string) bool {
	f := strings.Fields(cmd)
	return len(f) > 1 && strings.HasSuffix(f[0], "hutch") && f[1] == "serve"
}

// isRunsc tells the command line of a runsc command (run, kill, delete).
func isRunsc(cmd string) bool {
	f := strings.Fields(cmd)
	return len(f) > 0 && (f[0] == "runsc" || strings.HasSuffix(f[0], "/runsc"))
}

// isDocker tells the command line of one of Docker's processes.
func isDocker(cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return false
	}
	name := f[0][strings.LastIndexByte(f[0], '/')+1:]
	return name == "dockerd" || name == "runc" || strings.HasPrefix(name, "containerd") || name == "docker-init" || name == "docker-proxy"
}
