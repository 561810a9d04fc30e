package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestExt4Disks makes, mounts, fills and unmounts a real volume: the
// size is a limit (ENOSPC), the root is empty and writable by every user,
// and no loop device or mount is left.
func TestExt4Disks(t *testing.T) {
	testutil.RequiresRoot(t)
	d := ext4Disks{}
	if err := d.Check(); err != nil {
		testutil.Skip(t, err.Error())
	}
	dir := t.TempDir()
	file, mnt := filepath.Join(dir, "v.ext4"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.Make(file, 16); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil || st.Size != 16<<20 || st.Blocks*512 < 16<<20 {
		t.Fatalf("disk file: size %d, %d bytes allocated, %v; want 16 MiB, all allocated", st.Size, st.Blocks*512, err)
	}
	if err := d.Mount(file, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Unmount(mnt) })
	if entries, _ := os.ReadDir(mnt); len(entries) != 0 {
		t.Errorf("a new volume holds %v", entries)
	}
	if fi, err := os.Stat(mnt); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("volume root mode %v, %v; want 0777", fi.Mode(), err)
	}
	used, avail, err := d.Usage(mnt)
	if err != nil || avail == 0 || avail > 16<<20 {
		t.Fatalf("usage %d used, %d available, %v", used, avail, err)
	}
	f, err := os.Create(filepath.Join(mnt, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var werr error
	for i := 0; i < 32 && werr == nil; i++ {
		_, werr = f.Write(chunk)
	}
	if werr == nil {
		werr = f.Sync()
	}
	f.Close()
	if !errors.Is(werr, unix.ENOSPC) {
		t.Fatalf("writing 32 MiB into a 16 MiB volume: %v, want ENOSPC", werr)
	}
	if len(LoopDevices(dir)) != 1 {
		t.Errorf("loop devices of the volume while mounted: %v", LoopDevices(dir))
	}
	if err := d.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if err := d.Unmount(mnt); err != nil {
		t.Fatalf("unmounting twice: %v", err)
	}
	// The kernel detaches an autoclear loop device once its last user
	// is gone, in its own time after the unmount returns.
	testutil.Eventually(t, 30*time.Second, func() bool { return len(LoopDevices(dir)) == 0 }, "the volume's loop device is released")
	// The data is kept: mounted again, the file is there.
	if err := d.Mount(file, mnt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "fill")); err != nil {
		t.Fatal(err)
	}
	if err := d.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(LoopDevices(dir)) == 0 }, "the volume's loop device is released again")
}
