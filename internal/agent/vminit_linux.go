package agent

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/agent/vmspec"
)

// The microVM init: hutch-agent started by the kernel as /init of the
// initramfs that internal/runtime/microvm builds. It sets the guest up
// (pseudo filesystems, virtio modules, the image's disk under a private
// writable layer, switch root) and then serves the same session as under
// gVisor, on the virtio-serial port vmspec.PortName instead of stdio.

// Paths in the initramfs while the guest is set up.
const (
	vmLower   = "/mnt/lower" // the image's disk, read-only
	vmRW      = "/mnt/rw"    // the writable layer: its disk, or a tmpfs
	vmNewRoot = "/mnt/root"  // the overlay of both, the sandbox's root
)

// deviceWait bounds how long the init waits for a device to appear once
// its driver is loaded.
const deviceWait = 10 * time.Second

// moduleInitCompressedFile is finit_module's MODULE_INIT_COMPRESSED_FILE.
const moduleInitCompressedFile = 4

// IsVMInit reports whether this process is the init of a hutch microVM:
// PID 1, with vmspec.KeyVM=1 on the kernel command line. A VM's init starts
// without /proc, so it mounts /proc to read the command line; under gVisor
// /proc is already there.
func IsVMInit() bool {
	if os.Getpid() != 1 {
		return false
	}
	// A mounted /proc has /proc/self; only a VM's init has none yet.
	if _, err := os.Stat("/proc/self"); err != nil {
		if mkdirMount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") != nil {
			return false
		}
	}
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return false
	}
	return vmspec.InVM(string(b))
}

// VMInit sets the guest up as a sandbox and returns the agent's stream,
// the virtio-serial port vmspec.PortName. It is called once, by PID 1,
// after IsVMInit.
func VMInit(log *slog.Logger) (io.ReadWriteCloser, error) {
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return nil, fmt.Errorf("reading the kernel command line: %w", err)
	}
	params := vmspec.Params(string(cmdline))
	for _, m := range []struct{ src, dir, fstype, data string }{
		{"devtmpfs", "/dev", "devtmpfs", "mode=0755"},
		{"sysfs", "/sys", "sysfs", ""},
	} {
		if err := mkdirMount(m.src, m.dir, m.fstype, unix.MS_NOSUID, m.data); err != nil {
			return nil, err
		}
	}
	if err := loadModules(log, vmspec.ModulesDir); err != nil {
		return nil, err
	}
	if err := mountRoot(params[vmspec.KeyWritableDisk] == "1", vmspec.WritableMB(params)); err != nil {
		return nil, err
	}
	if err := trustEgressCA(vmspec.EgressCAPath, vmNewRoot); err != nil {
		log.Warn("adding hutch's egress CA to the image's CA bundle", "err", err)
	}
	// The initramfs stays in memory under the new root: drop its big files
	// (the running agent keeps its own pages).
	_ = os.Remove(vmspec.InitPath)
	_ = os.RemoveAll(vmspec.ModulesDir)
	if err := switchRoot(vmNewRoot); err != nil {
		return nil, err
	}
	if err := guestMounts(); err != nil {
		return nil, err
	}
	if err := sandboxCgroup(log, vmspec.PidsMax(params)); err != nil {
		return nil, err
	}
	if h := params[vmspec.KeyHostname]; h != "" {
		if err := unix.Sethostname([]byte(h)); err != nil {
			return nil, fmt.Errorf("setting the host name: %w", err)
		}
	}
	if err := loopbackUp(); err != nil {
		log.Warn("bringing up lo", "err", err)
	}
	if err := vmNetwork(params); err != nil {
		return nil, err
	}
	port, err := waitFor("virtio-serial port "+vmspec.PortName, deviceWait, func() (string, error) {
		return findPort("/sys/class/virtio-ports", vmspec.PortName)
	})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join("/dev", port), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the agent port: %w", err)
	}
	return f, nil
}

// mkdirMount creates dir if needed and mounts src there.
func mkdirMount(src, dir, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := unix.Mount(src, dir, fstype, flags, data); err != nil {
		return fmt.Errorf("mounting %s on %s: %w", fstype, dir, err)
	}
	return nil
}

// loadModules loads the kernel modules in dir, in order; one that is
// already loaded or built in is fine.
func loadModules(log *slog.Logger, dir string) error {
	mods, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := loadModule(m); err != nil {
			return err
		}
		log.Debug("loaded kernel module", "path", m.path)
	}
	return nil
}

// loadModule loads one module file with finit_module.
func loadModule(m moduleFile) error {
	f, err := os.Open(m.path)
	if err != nil {
		return fmt.Errorf("opening kernel module: %w", err)
	}
	defer f.Close()
	flags := 0
	if m.compressed {
		flags = moduleInitCompressedFile
	}
	if err := unix.FinitModule(int(f.Fd()), "", flags); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("loading kernel module %s: %w", filepath.Base(m.path), err)
	}
	return nil
}

// mountRoot mounts the sandbox's root at vmNewRoot: the image's disk
// read-only under a writable layer, joined by overlayfs. The writable
// layer is the disk vmspec.RWSerial when rwDisk, else a tmpfs of
// writableMB (0: tmpfs's default).
func mountRoot(rwDisk bool, writableMB uint64) error {
	disk, err := waitDisk(vmspec.RootSerial)
	if err != nil {
		return err
	}
	if err := mkdirMount(filepath.Join("/dev", disk), vmLower, vmspec.RootFSType, unix.MS_RDONLY, ""); err != nil {
		return err
	}
	if rwDisk {
		rw, err := waitDisk(vmspec.RWSerial)
		if err != nil {
			return err
		}
		if err := mkdirMount(filepath.Join("/dev", rw), vmRW, vmspec.RootFSType, unix.MS_NOATIME, ""); err != nil {
			return err
		}
	} else {
		data := "mode=0755"
		if writableMB > 0 {
			data += ",size=" + strconv.FormatUint(writableMB, 10) + "m"
		}
		if err := mkdirMount("tmpfs", vmRW, "tmpfs", 0, data); err != nil {
			return err
		}
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(vmRW, d), 0o755); err != nil {
			return fmt.Errorf("creating the writable layer: %w", err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work", vmLower, vmRW, vmRW)
	return mkdirMount("overlay", vmNewRoot, "overlay", 0, opts)
}

// waitDisk waits for the disk with serial and returns its device name.
func waitDisk(serial string) (string, error) {
	return waitFor("disk "+serial, deviceWait, func() (string, error) {
		return findDisk("/sys/block", serial)
	})
}

// switchRoot moves /dev, /proc and /sys into newRoot and makes it the
// root: the initramfs is a rootfs, which cannot be pivoted away from, so
// this is switch_root's move-and-chroot.
func switchRoot(newRoot string) error {
	for _, dir := range []string{"/dev", "/proc", "/sys"} {
		target := filepath.Join(newRoot, dir)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", target, err)
		}
		if err := unix.Mount(dir, target, "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("moving %s: %w", dir, err)
		}
	}
	if err := unix.Chdir(newRoot); err != nil {
		return fmt.Errorf("entering the new root: %w", err)
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving the new root: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("entering the new root: %w", err)
	}
	return unix.Chdir("/")
}

// guestMounts are the mounts a sandbox's processes expect besides /proc,
// /sys and /dev: terminals (the agent's PTYs) and shared memory.
func guestMounts() error {
	if err := mkdirMount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	// /dev/ptmx must open the instance just mounted.
	_ = os.Remove("/dev/ptmx")
	if err := os.Symlink("pts/ptmx", "/dev/ptmx"); err != nil {
		return fmt.Errorf("linking /dev/ptmx: %w", err)
	}
	// /dev/shm as under gVisor: 64 MiB, no executables.
	return mkdirMount("shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k")
}

// sandboxCgroup makes the cgroup under which every process the agent
// starts gets one of its own (procCgroups): with n > 0 it holds at most n
// tasks, so that a fork bomb fails with EAGAIN instead of filling the VM's
// memory while the agent, outside it, goes on; the memory controller below
// it tells an OOM kill apart. A kernel without that controller only loses
// the OOM reports.
func sandboxCgroup(log *slog.Logger, n uint64) error {
	const root = "/sys/fs/cgroup"
	if err := mkdirMount("cgroup2", root, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	dir := filepath.Join(root, "sandbox")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("creating the sandbox's cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
		return fmt.Errorf("enabling the pids controller: %w", err)
	}
	if n > 0 {
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(n, 10)), 0); err != nil {
			return fmt.Errorf("limiting tasks: %w", err)
		}
	}
	for _, d := range []string{root, dir} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			log.Warn("no memory controller: out-of-memory kills are not reported", "err", err)
			break
		}
	}
	procCgroups = dir
	return nil
}

// loopbackUp brings up lo, which a VM's kernel leaves down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
