// Package microvm runs sandboxes in QEMU microVMs (the "microvm" machine):
// a kernel of the sandbox's own, with KVM where the host has usable
// hardware virtualization and TCG (emulation, for testing) elsewhere.
//
// A VM boots Debian's cloud kernel with an initramfs this package builds
// and caches (initramfs.go): hutch-agent as /init plus the virtio modules
// it loads. The agent sets the guest up (internal/agent/vminit_linux.go):
// the image's disk, an ext4 file system made once per image and cached
// beside it (disk.go), mounted read-only under a private tmpfs writable
// layer, then serves its session on the virtio-serial port
// vmspec.PortName, which QEMU joins to a unix socket in the sandbox's
// directory: that socket is Instance.Conn.
//
// Everything a sandbox owns on the host is its QEMU process and its
// directory <StateDir>/sandboxes/<id> (the socket, the pid file). The
// directory is created first and removed last, so that Reconcile finds
// what a crashed daemon left.
//
// A sandbox with Network joins the namespace the daemon's network service
// made for it, and a TAP device is bridged to its veth there (network.go).
//
// Not yet: bind mounts, captured layers, checkpoints (docs/microvm.md).
package microvm

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/cgroups"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Name is the runtime's registry name.
const Name = "microvm"

func init() {
	runtime.Register(runtime.Registration{Name: Name, New: New,
		Settings: func() runtime.Settings { return DefaultSettings() }})
}

var (
	_ runtime.Runtime         = (*Runtime)(nil)
	_ runtime.Preparer        = (*Runtime)(nil)
	_ runtime.AbilityReporter = (*Runtime)(nil)
	_ runtime.Describer       = (*Runtime)(nil)
)

// validID matches the sandbox ids this runtime accepts: they name
// directories.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// Runtime starts microVMs. It is safe for concurrent use.
type Runtime struct {
	qemu     string // qemu-system-x86_64, absolute
	accel    string // "kvm" or "tcg"
	tscKHz   uint64 // the host's TSC frequency, told to TCG guests; or 0
	kernel   guestKernel
	stateDir string // absolute
	log      *slog.Logger
	cg       cgroups.Layout // issue 38: QEMU's cgroups (cgroup.go)

	// prepareMu serializes the building of image disks.
	prepareMu sync.Mutex

	mu sync.Mutex
	// live maps the ids of sandboxes this Runtime started and has not yet
	// destroyed to their instance; nil while a Start is in progress.
	// initramfs caches the initramfs made for an agent binary (by path,
	// size and modification time). Both are guarded by mu.
	live      map[string]*instance
	initramfs map[agentKey]string
}

// New checks the host (QEMU, the guest kernel and its modules, the
// accelerator) and prepares opts.StateDir. opts.Settings is the config's
// runtimes.microvm block.
func New(opts runtime.Options) (runtime.Runtime, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return newRuntime(opts, log)
}

func newRuntime(opts runtime.Options, log *slog.Logger) (*Runtime, error) {
	if opts.StateDir == "" {
		return nil, errors.New("microvm runtime: no state directory configured")
	}
	stateDir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: state directory: %w", err)
	}
	set, err := settings(opts.Settings)
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: %w", err)
	}
	qemu, err := findQEMU(set.QEMUPath)
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: %w", err)
	}
	kernel, err := findKernel(set.Kernel, "/boot", "/lib/modules")
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: %w", err)
	}
	accel, why, err := chooseAccel(set.Accel, kvmUsable)
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: %w", err)
	}
	if accel == AccelTCG {
		log.Warn("microvm runtime runs under TCG emulation: for testing only", "why", why, "kernel", kernel.version)
	} else {
		log.Info("microvm runtime runs under KVM", "why", why, "kernel", kernel.version)
	}
	cg, err := cgroups.Detect(cgroups.DefaultRoot)
	if err != nil {
		return nil, fmt.Errorf("microvm runtime: %w", err)
	}
	var tscKHz uint64
	if accel == AccelTCG {
		if cpuinfo, err := os.ReadFile("/proc/cpuinfo"); err == nil {
			tscKHz = hostTSCkHz(string(cpuinfo))
		}
	}
	r := &Runtime{
		tscKHz:    tscKHz,
		qemu:      qemu,
		accel:     accel,
		kernel:    kernel,
		stateDir:  stateDir,
		log:       log,
		cg:        cg,
		live:      map[string]*instance{},
		initramfs: map[agentKey]string{},
	}
	if err := mkdirs(r.sandboxesDir(), r.initramfsDir()); err != nil {
		return nil, fmt.Errorf("microvm runtime: creating state directory: %w", err)
	}
	return r, nil
}

// Name returns "microvm".
func (r *Runtime) Name() string { return Name }

// Accel is the accelerator the VMs run with: "kvm" or "tcg".
func (r *Runtime) Accel() string { return r.accel }

// tcgBootTimeout is the least a boot is given under TCG emulation, ten or
// more times slower than KVM: on a busy host a boot and its agent's first
// answer take longer than the daemon's 30 s.
const tcgBootTimeout = 2 * time.Minute

// BootTimeout is runtime.SlowBooter: a boot under TCG gets tcgBootTimeout.
func (r *Runtime) BootTimeout() time.Duration {
	if r.accel == AccelTCG {
		return tcgBootTimeout
	}
	return 0
}

// Mode is Accel, for runtime.Describer.
func (r *Runtime) Mode() string { return r.accel }

// Abilities are what instances of this runtime can do beyond the contract.
func (r *Runtime) Abilities() runtime.Abilities { return runtime.Discover(r, (*instance)(nil)) }

// sandboxesDir holds one directory per sandbox.
func (r *Runtime) sandboxesDir() string { return filepath.Join(r.stateDir, "sandboxes") }

// sandboxDir is the directory of sandbox id.
func (r *Runtime) sandboxDir(id string) string { return filepath.Join(r.sandboxesDir(), id) }

// initramfsDir caches initramfs files by the hash of their inputs.
func (r *Runtime) initramfsDir() string { return filepath.Join(r.stateDir, "initramfs") }

// findQEMU resolves qemu-system-x86_64: runtimes.microvm.qemu_path, else
// on PATH.
func findQEMU(explicit string) (string, error) {
	if explicit != "" {
		return runtime.FindBinary(explicit, "qemu-system-x86_64")
	}
	p, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return "", fmt.Errorf("qemu-system-x86_64 not found (install qemu-system-x86: make deps-microvm): %w", err)
	}
	return filepath.Abs(p)
}
