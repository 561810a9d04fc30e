package volumes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// loopControl is the kernel's loop device allocator.
const loopControl = "/dev/loop-control"

// ext4Disks makes each volume an ext4 file system in an allocated file and
// mounts it through a loop device that frees itself once unmounted
// (LO_FLAGS_AUTOCLEAR), so no loop device outlives its mount.
type ext4Disks struct{}

// Check needs the loop driver, mkfs.ext4 and debugfs (e2fsprogs).
func (ext4Disks) Check() error {
	if _, err := os.Stat(loopControl); err != nil {
		return fmt.Errorf("no loop devices (%s: %w); load the loop module (modprobe loop) or run the daemon where /dev has them", loopControl, err)
	}
	for _, tool := range []string{"mkfs.ext4", "debugfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found; install e2fsprogs", tool)
		}
	}
	return nil
}

// Make creates file with its whole size allocated, formats it as ext4 with no blocks reserved
// for root (size_mb is what every user may write), and leaves its root
// directory empty (no lost+found) and writable by every user of the
// sandboxes.
func (ext4Disks) Make(file string, sizeMB uint64) (err error) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(file)
		}
	}()
	// Allocated, not sparse (issue 38: 2): a volume's writes never need
	// more of the host's disk, so a full host disk fails the create (ENOSPC,
	// S402), not a write into the volume later (the loop device would lose it).
	err = unix.Fallocate(int(f.Fd()), 0, 0, int64(sizeMB)<<20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// No discard: it would punch the allocation back out of the file.
	// 4 KiB blocks: a file system of smaller ones does not mount on the
	// loop device's 4 KiB sectors.
	out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-b", "4096",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0,nodiscard", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// Unmounted, so that a crash leaves nothing mounted: debugfs edits
	// the new file system in place.
	cmd := exec.Command("debugfs", "-w", "-f", "-", file)
	cmd.Stdin = strings.NewReader("rmdir lost+found\nset_inode_field / mode 040777\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debugfs: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	// debugfs exits 0 when a command fails; it says so on stderr, after
	// its banner.
	for line := range strings.Lines(stderr.String()) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "debugfs ") {
			return fmt.Errorf("debugfs: %s", line)
		}
	}
	return nil
}

// Mount attaches file to a free loop device and mounts it on dir
// (nosuid, nodev; no discard, so deleted blocks stay the volume's and a
// write never needs the host's disk again).
func (ext4Disks) Mount(file, dir string) error {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := waitDetached(file); err != nil {
		return err
	}
	dev, err := attachLoop(f)
	if err != nil {
		return fmt.Errorf("attaching %s to a loop device: %w", file, err)
	}
	// Once mounted, the mount holds the device; closing ours leaves the
	// mount as its only user, so unmounting frees it (autoclear). A failed
	// mount frees it here.
	defer dev.Close()
	if err := unix.Mount(dev.Name(), dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("mounting %s (%s) on %s: %w", file, dev.Name(), dir, err)
	}
	return nil
}

// detachWait is how long a mount waits for a loop device that still has
// its file (the kernel frees an autoclear device after the last user).
const detachWait = 10 * time.Second

// waitDetached waits until no loop device has file, so that a file system
// is never mounted twice at once (which would corrupt it): one left by a
// crashed daemon goes once the sandboxes that held it are destroyed.
func waitDetached(file string) error {
	deadline := time.Now().Add(detachWait)
	for {
		devs := LoopDevices(file)
		if len(devs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still attached to %s (mounted by an earlier daemon's sandbox?); not mounting it twice", file, strings.Join(devs, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LoopDevices lists the loop devices whose backing file is path or is
// under it, as "/dev/loopN (FILE)".
func LoopDevices(path string) []string {
	var devs []string
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, err := os.ReadFile(f)
		backing := strings.TrimSpace(string(b))
		if err == nil && (backing == path || strings.HasPrefix(backing, path+"/")) {
			devs = append(devs, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f)))+" ("+backing+")")
		}
	}
	return devs
}

// attachLoop binds f to a free loop device with autoclear and returns the
// device open. Another process may take the free device first: then it
// asks again.
func attachLoop(f *os.File) (*os.File, error) {
	ctl, err := os.OpenFile(loopControl, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	for range 32 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("finding a free loop device: %w", err)
		}
		dev, err := os.OpenFile(fmt.Sprintf("/dev/loop%d", n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		err = configureLoop(int(dev.Fd()), f)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, err
		}
	}
	return nil, errors.New("every free loop device was taken by others first")
}

// configureLoop binds the loop device fd to f with autoclear: with direct
// I/O and 4 KiB sectors where the kernel and f's file system allow (no
// second copy of the data in the host's page cache), else buffered, and on
// kernels before 5.8 (no LOOP_CONFIGURE) in two calls.
func configureLoop(fd int, f *os.File) error {
	info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
	copy(info.File_name[:len(info.File_name)-1], f.Name())
	direct := info
	direct.Flags |= unix.LO_FLAGS_DIRECT_IO
	err := unix.IoctlLoopConfigure(fd, &unix.LoopConfig{Fd: uint32(f.Fd()), Size: 4096, Info: direct})
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	err = unix.IoctlLoopConfigure(fd, &unix.LoopConfig{Fd: uint32(f.Fd()), Info: info})
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return err
	}
	if err := unix.IoctlSetInt(fd, unix.LOOP_SET_FD, int(f.Fd())); err != nil {
		return err
	}
	if err := unix.IoctlLoopSetStatus64(fd, &info); err != nil {
		_ = unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
		return err
	}
	return nil
}

// Unmount unmounts dir, lazily when it is busy; a dir that is not a mount
// point (or is gone) is not an error.
func (ext4Disks) Unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmounting %s: %w", dir, err)
}

// Usage is statfs of the file system mounted on dir.
func (ext4Disks) Usage(dir string) (used, available uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := uint64(st.Bsize)
	return (st.Blocks - st.Bfree) * bs, st.Bavail * bs, nil
}
