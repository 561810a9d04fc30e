// Package hostscan finds what a hutch daemon's sandboxes hold on the host:
// processes, mounts (pinned network namespaces among them), cgroups,
// network devices, nftables rules, loop devices, checkpoints and sandbox
// directories. Leftovers lists what remains after the sandboxes are gone
// (the leak scan of the integration tests and of `hutch bench --soak`);
// Count counts what a live daemon holds, for the soak's windows.
package hostscan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/internal/volumes"
)

// Leftovers lists what remains on the host of sandboxes, in every
// runtime: processes (runsc's, QEMU's) whose command line or working
// directory, mounts (network namespaces pinned in a sandbox's directory
// included) and nftables rules that mention dataDir (when it is not ""),
// every sandbox directory in a runtime's state directory (disks, sockets),
// loop devices and passing checkpoints of dataDir, and everything that
// mentions one of ids, cgroups and network devices included. A microVM's
// TAP device lives in its sandbox's network namespace and goes with it
// (or with QEMU).
func Leftovers(dataDir string, ids []string) []string {
	found := Processes(dataDir, ids)
	for _, line := range mountLines(dataDir, ids) {
		found = append(found, "mount: "+line)
	}
	found = append(found, NetworkLeftovers(dataDir, ids)...)
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
		for _, d := range SandboxDirs(dataDir) {
			found = append(found, "sandbox directory: "+d)
		}
	}
	for _, cg := range cgroups(ids) {
		found = append(found, "cgroup: "+cg)
	}
	if dataDir != "" {
		want := idSet(ids)
		dirs, _ := filepath.Glob(filepath.Join(dataDir, "*", "*", "*"))
		for _, d := range dirs {
			if want[filepath.Base(d)] {
				found = append(found, "directory: "+d)
			}
		}
	}
	return found
}

// idSet is ids as a set.
func idSet(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// SandboxDirs lists the sandbox directories in the runtimes' state
// directories of dataDir (one per sandbox not yet torn down).
func SandboxDirs(dataDir string) []string {
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "*", "sandboxes", "*"))
	return dirs
}

// NetworkLeftovers lists network devices whose alias names one of ids (the
// host end of a sandbox's veth is aliased "hutch:<table>:<id>") and nftables
// lines that mention one of ids or dataDir (the comment of a daemon's
// table names its state directory).
func NetworkLeftovers(dataDir string, ids []string) []string {
	var found []string
	for _, l := range links(ids) {
		found = append(found, "network device "+l)
	}
	for _, line := range nftLines(dataDir, ids) {
		found = append(found, "nftables: "+line)
	}
	return found
}

// Processes lists the processes, the daemon aside, whose command line or
// working directory (a microVM's QEMU runs in its sandbox's directory)
// mentions dataDir or one of ids.
func Processes(dataDir string, ids []string) []string {
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

// Objects counts what a daemon's sandboxes hold on the host.
type Objects struct {
	Processes int `json:"processes"`
	// Mounts counts every mount of the daemon's directory; Netns those of
	// them that pin a network namespace.
	Mounts int `json:"mounts"`
	Netns  int `json:"netns"`
	// Cgroups counts the sandboxes' cgroups, one per controller.
	Cgroups int `json:"cgroups"`
	// Veths counts the host ends of the sandboxes' veths.
	Veths int `json:"veths"`
	// NftRules counts the lines of nftables rules of the sandboxes and of
	// the daemon's table.
	NftRules int `json:"nft_rules"`
}

// Count counts the objects of the daemon whose data dir is dataDir and of
// the sandboxes ids (give every id the daemon may have had: those of its
// sandbox directories included, as SandboxDirs lists them).
func Count(dataDir string, ids []string) Objects {
	var o Objects
	o.Processes = len(Processes(dataDir, ids))
	for _, line := range mountLines(dataDir, ids) {
		o.Mounts++
		if strings.Contains(line, " - nsfs ") {
			o.Netns++
		}
	}
	o.Cgroups = len(cgroups(ids))
	o.Veths = len(links(ids))
	o.NftRules = len(nftLines(dataDir, ids))
	return o
}

// mountLines are the lines of /proc/self/mountinfo that mention dataDir
// or one of ids.
func mountLines(dataDir string, ids []string) []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(mi), "\n") {
		if mentions(line, dataDir, ids) {
			found = append(found, line)
		}
	}
	return found
}

// cgroups lists the cgroups of ids, in every controller: one listing of
// the hutch cgroups, not one per id (a soak knows thousands, and a slow
// scan would miss the short-lived sandboxes it looks for).
func cgroups(ids []string) []string {
	want := idSet(ids)
	var found []string
	for _, pattern := range []string{"/sys/fs/cgroup/*/hutch/*", "/sys/fs/cgroup/*/*/hutch/*"} {
		cgs, _ := filepath.Glob(pattern)
		for _, cg := range cgs {
			if want[filepath.Base(cg)] {
				found = append(found, cg)
			}
		}
	}
	return found
}

// links lists the network devices whose alias names one of ids, as
// "NAME: ALIAS".
func links(ids []string) []string {
	var found []string
	aliases, _ := filepath.Glob("/sys/class/net/*/ifalias")
	for _, a := range aliases {
		b, err := os.ReadFile(a)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(b), id) {
				found = append(found, filepath.Base(filepath.Dir(a))+": "+strings.TrimSpace(string(b)))
			}
		}
	}
	return found
}

// nftLines lists the nftables lines that mention dataDir or one of ids;
// none without nft.
func nftLines(dataDir string, ids []string) []string {
	out, err := exec.Command("nft", "list", "ruleset").Output()
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		if mentions(line, dataDir, ids) {
			found = append(found, strings.TrimSpace(line))
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
