// Package doctor checks a host for what hutch needs (`hutch doctor`): each
// check names what it looked at, a verdict, and what to do when it is not
// ok. A host with no failing check can run `hutch serve`.
package doctor

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/gvisor"
	"github.com/hutch-dev/hutch/internal/runtime/microvm"
)

// Verdict is a check's outcome.
type Verdict int

// The verdicts: Warn still lets hutch run, Fail does not.
const (
	OK Verdict = iota
	Warn
	Fail
)

func (v Verdict) String() string { return [...]string{"ok", "warn", "FAIL"}[v] }

// Check is one line of the report.
type Check struct {
	Name    string
	Verdict Verdict
	// Detail is what was found; Fix, when not ok, what to do.
	Detail, Fix string
}

// Options say what to check against: the daemon's config and flags.
type Options struct {
	Config  config.Config
	DataDir string
	// Listen are the TCP addresses the daemon would bind.
	Listen []string
	// RunscPath and AgentPath are the --runsc-path and --agent-path
	// flags ("" looks next to hutch, then on PATH).
	RunscPath, AgentPath string
	// Proc and Sys are where procfs and sysfs are (/proc, /sys).
	Proc, Sys string
}

// Thresholds of the checks.
const (
	// minKernel is the oldest kernel gVisor's systrap platform runs on.
	minKernelMajor, minKernelMinor = 4, 14
	// Free space of the data dir: below warnFreeMB a few images and
	// snapshots fill it; below failFreeMB not even one image fits.
	warnFreeMB, failFreeMB = 10 << 10, 2 << 10
)

// Run runs every check, in the order a newcomer fixes them.
func Run(ctx context.Context, o Options) []Check {
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	if o.Sys == "" {
		o.Sys = "/sys"
	}
	checks := []Check{root(), kernel(o.Proc), seccomp(o.Proc), cgroupCheck(o.Sys), nftables(ctx), userns(o.Proc), kvm()}
	checks = append(checks, dataDir(o.DataDir, o.Proc)...)
	checks = append(checks, memory(o.Proc, o.Config))
	for _, addr := range o.Listen {
		checks = append(checks, port(ctx, addr))
	}
	checks = append(checks, runsc(ctx, o.RunscPath, o.Config), agent(o.AgentPath), imageCache(o))
	return checks
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	return slices.ContainsFunc(checks, func(c Check) bool { return c.Verdict == Fail })
}

func root() Check {
	if os.Geteuid() == 0 {
		return Check{Name: "root", Detail: "running as root (hutch serve runs runsc as root)"}
	}
	return Check{Name: "root", Verdict: Fail, Detail: fmt.Sprintf("running as uid %d", os.Geteuid()),
		Fix: "run hutch serve (and this check) as root: sudo hutch doctor; other users reach the daemon through its socket"}
}

// kernel checks the kernel release against gVisor's minimum.
func kernel(proc string) Check {
	c := Check{Name: "kernel"}
	raw, err := os.ReadFile(filepath.Join(proc, "sys/kernel/osrelease"))
	if err != nil {
		return Check{Name: "kernel", Verdict: Fail, Detail: err.Error(), Fix: "hutch runs on Linux only"}
	}
	rel := strings.TrimSpace(string(raw))
	major, minor, ok := parseRelease(rel)
	c.Detail = "Linux " + rel
	if !ok {
		c.Verdict, c.Detail = Warn, c.Detail+" (version not understood)"
		return c
	}
	if major < minKernelMajor || major == minKernelMajor && minor < minKernelMinor {
		c.Verdict, c.Fix = Fail, fmt.Sprintf("gVisor needs Linux %d.%d or later: upgrade the kernel", minKernelMajor, minKernelMinor)
	}
	return c
}

// parseRelease reads major.minor from a kernel release ("6.1.0-13-amd64").
func parseRelease(rel string) (major, minor int, ok bool) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}

// seccomp checks that the kernel filters system calls, which gVisor's
// systrap platform and its own sandboxing need.
func seccomp(proc string) Check {
	raw, err := os.ReadFile(filepath.Join(proc, "self/status"))
	if err == nil && strings.Contains(string(raw), "\nSeccomp:") {
		return Check{Name: "seccomp", Detail: "seccomp filters supported (gVisor's systrap platform)"}
	}
	return Check{Name: "seccomp", Verdict: Fail, Detail: "the kernel has no seccomp", Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
}

// cgroupCheck finds the cgroup layout and its controllers.
func cgroupCheck(sys string) Check {
	c := Check{Name: "cgroups"}
	l, err := cgroups.Detect(filepath.Join(sys, "fs/cgroup"))
	if err != nil {
		return Check{Name: "cgroups", Verdict: Fail, Detail: err.Error(), Fix: "mount cgroup2 on /sys/fs/cgroup (systemd does at boot)"}
	}
	if !l.V2 {
		c.Verdict, c.Detail = Warn, "cgroup v1: sandboxes run with limits, but v2 is what hutch is tested most on"
		c.Fix = "boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2"
		return c
	}
	raw, err := os.ReadFile(filepath.Join(l.Root, "cgroup.controllers"))
	if err != nil {
		return Check{Name: "cgroups", Verdict: Fail, Detail: err.Error()}
	}
	have := strings.Fields(string(raw))
	var missing []string
	for _, want := range []string{"cpu", "memory", "pids"} {
		if !slices.Contains(have, want) {
			missing = append(missing, want)
		}
	}
	c.Detail = "cgroup v2, controllers: " + strings.Join(have, " ")
	if len(missing) > 0 {
		c.Verdict = Fail
		c.Fix = "the controllers " + strings.Join(missing, ", ") + " are not delegated to hutch's cgroup: run it as the package's unit (Delegate=yes), or enable them in the parent's cgroup.subtree_control"
	}
	return c
}

// nftables checks the nft command that sandbox networks are firewalled with.
func nftables(ctx context.Context) Check {
	path, err := exec.LookPath("nft")
	if err != nil {
		return Check{Name: "nftables", Verdict: Fail, Detail: "no nft command", Fix: "apt-get install nftables"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, "list", "tables").CombinedOutput(); err != nil {
		return Check{Name: "nftables", Verdict: Fail, Detail: fmt.Sprintf("nft list tables: %v: %s", err, firstLine(out)),
			Fix: "hutch needs the nf_tables kernel module and root (CAP_NET_ADMIN)"}
	}
	return Check{Name: "nftables", Detail: path + " works"}
}

// userns checks that user namespaces can be made.
func userns(proc string) Check {
	raw, err := os.ReadFile(filepath.Join(proc, "sys/user/max_user_namespaces"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || n == 0 {
		return Check{Name: "user namespaces", Verdict: Warn, Detail: "user.max_user_namespaces is 0 or missing",
			Fix: "sysctl -w user.max_user_namespaces=15000 (gVisor's gofer and checkpoints use them)"}
	}
	return Check{Name: "user namespaces", Detail: fmt.Sprintf("up to %d", n)}
}

// kvm says how microVMs would run: KVM, or QEMU's TCG emulation.
func kvm() Check {
	qemu, qerr := exec.LookPath("qemu-system-x86_64")
	err := microvm.KVMUsable()
	switch {
	case qerr != nil:
		return Check{Name: "kvm", Verdict: Warn, Detail: "no qemu-system-x86_64: the microvm runtime is unavailable (gVisor is enough)",
			Fix: "make deps-microvm (or apt-get install qemu-system-x86 linux-image-cloud-amd64) for microVMs"}
	case err != nil:
		return Check{Name: "kvm", Verdict: Warn, Detail: "software virtualization: microVMs run under TCG emulation, ten or more times slower (" + err.Error() + ")",
			Fix: "for fast microVMs use a host with vmx/svm and /dev/kvm; gVisor sandboxes are not affected"}
	}
	return Check{Name: "kvm", Detail: "hardware virtualization (/dev/kvm, " + qemu + "): microVMs run at native speed"}
}

// existing is path or its nearest existing parent.
func existing(path string) string {
	for {
		if _, err := os.Stat(path); err == nil || path == "/" || path == "." {
			return path
		}
		path = filepath.Dir(path)
	}
}

// fsNames names the filesystem magics a data dir is likely on.
var fsNames = map[int64]string{0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs",
	0x794c7630: "overlayfs", 0x2fc12fc1: "zfs", 0x6969: "nfs", 0x65735546: "fuse"}

// dataDir checks the free space and filesystem of the data dir.
func dataDir(dir, proc string) []Check {
	var st unix.Statfs_t
	at := existing(dir)
	if err := unix.Statfs(at, &st); err != nil {
		return []Check{{Name: "data dir", Verdict: Fail, Detail: err.Error()}}
	}
	freeMB := int64(st.Bavail) * st.Bsize >> 20
	fs := fsNames[int64(st.Type)]
	if fs == "" {
		fs = fmt.Sprintf("filesystem 0x%x", st.Type)
	}
	space := Check{Name: "disk space", Detail: fmt.Sprintf("%s: %d MiB free on %s", dir, freeMB, fs)}
	switch {
	case freeMB < failFreeMB:
		space.Verdict, space.Fix = Fail, fmt.Sprintf("free at least %d MiB under %s (images, snapshots and volumes live there), or pass --data-dir", failFreeMB, dir)
	case freeMB < warnFreeMB:
		space.Verdict, space.Fix = Warn, fmt.Sprintf("%d MiB or more is comfortable for a few images and snapshots", warnFreeMB)
	}
	fsys := Check{Name: "filesystem", Detail: fs + " (sandboxes' root filesystems are overlays over it)"}
	filesystems, _ := os.ReadFile(filepath.Join(proc, "filesystems"))
	switch {
	case !strings.Contains(string(filesystems), "\toverlay\n"):
		fsys.Verdict, fsys.Fix = Warn, "the kernel lists no overlay filesystem: modprobe overlay"
	case fs == "overlayfs" || fs == "nfs" || fs == "fuse":
		fsys.Verdict, fsys.Fix = Warn, "a data dir on "+fs+" is slow or cannot hold overlay layers: put it on a local ext4 or xfs (--data-dir)"
	}
	return []Check{space, fsys}
}

// memory compares the memory available with what a sandbox and the warm
// pool take.
func memory(proc string, cfg config.Config) Check {
	avail, err := memAvailableMB(proc)
	if err != nil {
		return Check{Name: "memory", Verdict: Warn, Detail: err.Error()}
	}
	c := Check{Name: "memory", Detail: fmt.Sprintf("%d MiB available; a sandbox takes up to %d MiB, the warm pool up to %d MiB", avail, cfg.DefaultMemoryMB, cfg.WarmPoolMemoryMB)}
	switch {
	case avail < int64(cfg.DefaultMemoryMB):
		c.Verdict, c.Fix = Fail, "not enough memory for one sandbox of default_memory_mb: lower it, or free memory"
	case avail < int64(cfg.DefaultMemoryMB)+int64(cfg.WarmPoolMemoryMB):
		c.Verdict, c.Fix = Warn, "the warm pool and a sandbox do not both fit: lower warm_pool_memory_mb, or set warm_pool: {}"
	}
	return c
}

// memAvailableMB reads MemAvailable from meminfo.
func memAvailableMB(proc string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(proc, "meminfo"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb >> 10, err
		}
	}
	return 0, errors.New("meminfo has no MemAvailable")
}

// port checks that a listen address is free, or held by a hutch daemon.
func port(ctx context.Context, addr string) Check {
	c := Check{Name: "port " + addr}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		c.Detail = "free"
		return c
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		c.Verdict, c.Detail, c.Fix = Fail, err.Error(), "pass another address (--listen, --engine-listen)"
		return c
	}
	if isHutch(ctx, addr) {
		c.Detail = "in use by a running hutch daemon"
		return c
	}
	c.Verdict, c.Detail = Fail, "in use by another program"
	c.Fix = "stop it (ss -ltnp 'sport = :" + portOf(addr) + "' names it), or pass another address (--listen, --engine-listen)"
	return c
}

// isHutch reports whether the daemon at addr answers hutch's /healthz.
func isHutch(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for _, scheme := range []string{"http", "https"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(body), `"runtimes"`) {
			return true
		}
	}
	return false
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// runsc finds runsc and asks its version.
func runsc(ctx context.Context, flag string, cfg config.Config) Check {
	if flag == "" {
		if s, err := cfg.Runtimes.Decode("gvisor"); err == nil {
			if g, ok := s.(*gvisor.Settings); ok {
				flag = g.RunscPath
			}
		}
	}
	path, err := runtime.FindBinary(flag, "runsc")
	if err != nil {
		return Check{Name: "runsc", Verdict: Fail, Detail: err.Error(), Fix: "make build puts runsc next to hutch (or pass --runsc-path)"}
	}
	v, err := RunscVersion(ctx, path)
	if err != nil {
		return Check{Name: "runsc", Verdict: Fail, Detail: err.Error(), Fix: "rebuild it: make build"}
	}
	return Check{Name: "runsc", Detail: path + ": " + v}
}

// RunscVersion is the first line of `runsc --version` of the binary at path.
func RunscVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return firstLine(out), nil
}

// agent finds hutch-agent and reads its build.
func agent(flag string) Check {
	path, err := runtime.FindBinary(flag, "hutch-agent")
	if err != nil {
		return Check{Name: "hutch-agent", Verdict: Fail, Detail: err.Error(), Fix: "make build puts hutch-agent next to hutch (or pass --agent-path)"}
	}
	v, err := BinaryVersion(path)
	if err != nil {
		return Check{Name: "hutch-agent", Verdict: Fail, Detail: err.Error(), Fix: "rebuild it: make build"}
	}
	return Check{Name: "hutch-agent", Detail: path + ": " + v}
}

// BinaryVersion describes the hutch-agent binary at path: the version it
// says (`--version`), and its Go build (toolchain, commit when stamped).
func BinaryVersion(path string) (string, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return firstLine(out) + " (" + Describe(bi) + ")", nil
}

// imageCache reports what the image cache holds.
func imageCache(o Options) Check {
	dir := o.Config.ImageCacheDir
	if dir == "" {
		dir = filepath.Join(o.DataDir, "images")
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return Check{Name: "image cache", Detail: dir + " is empty: the first sandbox of each preset builds its image (minutes)"}
	}
	if err != nil {
		return Check{Name: "image cache", Verdict: Fail, Detail: err.Error()}
	}
	return Check{Name: "image cache", Detail: fmt.Sprintf("%s: %d entries", dir, len(entries))}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}
