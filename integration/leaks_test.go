package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// leftovers lists what remains on the host of sandboxes, in every
// runtime: processes (runsc's, QEMU's) whose command line or working
// directory, mounts (network namespaces pinned in a sandbox's directory
// included) and nftables rules that mention dataDir (when it is not ""),
// every sandbox directory in a runtime's state directory (disks, sockets),
// loop devices and passing checkpoints of dataDir, and everything that
// mentions one of ids, cgroups and network devices included. A microVM's
// TAP device lives in its sandbox's network namespace and goes with it
// (or with QEMU).
func leftovers(dataDir string, ids []string) []string {
	found := processLeftovers(dataDir, ids)
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if mentions(line, dataDir, ids) {
				found = append(found, "mount: "+line)
			}
		}
	}
	found = append(found, networkLeftovers(dataDir, ids)...)
	if dataDir != "" {
		for _, loop := range volumes.LoopDevices(dataDir) {
			found = append(found, "loop device "+loop)
		}
		// Checkpoints of a fork, a refused snapshot or a hibernation never
		// outlive their operation and their sandbox.
		for _, pattern := range []string{"tmp-*", "hibernated-*"} {
			dirs, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", pattern))
			for _, d := range dirs {
				found = append(found, "checkpoint: "+d)
			}
		}
		sandboxes, _ := filepath.Glob(filepath.Join(dataDir, "*", "sandboxes", "*"))
		for _, d := range sandboxes {
			found = append(found, "sandbox directory: "+d)
		}
	}
	for _, id := range ids {
		cgs, _ := filepath.Glob("/sys/fs/cgroup/*/hutch/" + id)
		more, _ := filepath.Glob("/sys/fs/cgroup/*/*/hutch/" + id)
		for _, cg := range append(cgs, more...) {
			found = append(found, "cgroup: "+cg)
		}
		if dataDir != "" {
			dirs, _ := filepath.Glob(filepath.Join(dataDir, "*", "*", id))
			for _, d := range dirs {
				found = append(found, "directory: "+d)
			}
		}
	}
	return found
}

// processLeftovers lists the processes, the daemon aside, whose command
// line or working directory (a microVM's QEMU runs in its sandbox's
// directory) mentions dataDir or one of ids.
func processLeftovers(dataDir string, ids []string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		cmdline := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		if strings.Contains(cmdline, " serve ") {
			continue // the daemon itself
		}
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if mentions(cmdline, dataDir, ids) || mentions(cwd, dataDir, ids) {
			found = append(found, "process "+filepath.Base(p)+" (in "+cwd+"): "+cmdline)
		}
	}
	return found
}

// mentions reports whether s names dataDir (when it is not "") or one of
// ids.
func mentions(s, dataDir string, ids []string) bool {
	return (dataDir != "" && strings.Contains(s, dataDir)) ||
		slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(s, id) })
}

// assertNoLeftovers waits up to 60 s (a busy machine tears down slowly) for the sandboxes of dataDir (all of
// them when dataDir is not "", else only the given ids) to leave nothing
// behind, then fails listing what remains.
func assertNoLeftovers(t *testing.T, dataDir string, ids ...string) {
	t.Helper()
	var left []string
	if testutil.Poll(60*time.Second, func() bool { left = leftovers(dataDir, ids); return len(left) == 0 }) {
		return
	}
	t.Errorf("leftovers of %s:\n  %s", dataDir, strings.Join(left, "\n  "))
}

// networkLeftovers lists network devices whose alias names one of ids (the
// host end of a sandbox's veth is aliased "hutch:<table>:<id>") and nftables
// lines that mention one of ids or dataDir (the comment of a daemon's
// table names its state directory).
func networkLeftovers(dataDir string, ids []string) []string {
	var found []string
	aliases, _ := filepath.Glob("/sys/class/net/*/ifalias")
	for _, a := range aliases {
		b, err := os.ReadFile(a)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(b), id) {
				found = append(found, "network device "+filepath.Base(filepath.Dir(a))+": "+strings.TrimSpace(string(b)))
			}
		}
	}
	out, err := exec.Command("nft", "list", "ruleset").Output()
	if err != nil {
		return found // no nftables: no rules either
	}
	for _, line := range strings.Split(string(out), "\n") {
		if mentions(line, dataDir, ids) {
			found = append(found, "nftables: "+strings.TrimSpace(line))
		}
	}
	return found
}
