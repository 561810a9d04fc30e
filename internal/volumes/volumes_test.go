package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

func openTest(t *testing.T, dir string, disks Disks) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, DefaultSizeMB: 64, MaxSizeMB: 1024, MaxPerOwner: 3, Disks: disks})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "data", "my-vol-2", "0", "a23456789012345678901234567890123456789012345678901234567890123"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b", "a/b", "..", "a b", "é", "a234567890123456789012345678901234567890123456789012345678901234"} {
		err := CheckName(bad)
		if !errdefs.Is(err, errdefs.CodeVolumeInvalid) {
			t.Errorf("CheckName(%q) = %v, want S263", bad, err)
		}
	}
}

func TestCreateListGetDelete(t *testing.T) {
	disks := volumestest.New()
	s := openTest(t, t.TempDir(), disks)
	info, err := s.Create("alice", "data", 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "data" || info.SizeMB != 64 || info.CreatedAt.IsZero() {
		t.Fatalf("created %+v; want the default size", info)
	}
	_, err = s.Create("alice", "data", 128)
	wantCode(t, err, errdefs.CodeVolumeExists)
	for _, size := range []uint64{1, 7, 1025} {
		_, err = s.Create("alice", "big", size)
		wantCode(t, err, errdefs.CodeVolumeInvalid)
	}
	_, err = s.Create("alice", "Bad_Name", 0)
	wantCode(t, err, errdefs.CodeVolumeInvalid)
	if _, err := s.Create("alice", "more", 8); err != nil {
		t.Fatal(err)
	}
	if names := names(s.List("alice")); !slices.Equal(names, []string{"data", "more"}) {
		t.Fatalf("list = %v", names)
	}
	got, err := s.Get("alice", "data")
	if err != nil || got.UsedBytes != 4096 || got.AvailableBytes != 1<<20 {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if disks.Mounts() != 0 {
		t.Fatalf("a get left %d mounts", disks.Mounts())
	}
	if err := s.Delete("alice", "data"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get("alice", "data")
	wantCode(t, err, errdefs.CodeNoVolume)
	wantCode(t, s.Delete("alice", "data"), errdefs.CodeNoVolume)
}

func names(infos []Info) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

// TestOwnersAreApart: another owner's volume is not found, whatever the
// call, and names are per owner.
func TestOwnersAreApart(t *testing.T) {
	s := openTest(t, t.TempDir(), volumestest.New())
	if _, err := s.Create("alice", "data", 0); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get("bob", "data")
	wantCode(t, err, errdefs.CodeNoVolume)
	wantCode(t, s.Delete("bob", "data"), errdefs.CodeNoVolume)
	_, err = s.Acquire("bob", "sb1", []string{"data"})
	wantCode(t, err, errdefs.CodeNoVolume)
	if l := s.List("bob"); len(l) != 0 {
		t.Fatalf("bob lists %v", names(l))
	}
	if _, err := s.Create("bob", "data", 0); err != nil {
		t.Fatalf("bob's own volume named like alice's: %v", err)
	}
	if _, err := s.Get("alice", "data"); err != nil {
		t.Fatal(err)
	}
}

func TestPerOwnerCap(t *testing.T) {
	s := openTest(t, t.TempDir(), volumestest.New())
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Create("alice", n, 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Create("alice", "d", 0)
	wantCode(t, err, errdefs.CodeCapacity)
	if _, err := s.Create("bob", "d", 0); err != nil {
		t.Fatalf("another owner's cap: %v", err)
	}
}

// TestAcquireHoldsAndMounts: a volume is mounted while a user holds it,
// cannot be deleted meanwhile, and is unmounted with its last user.
func TestAcquireHoldsAndMounts(t *testing.T) {
	disks := volumestest.New()
	s := openTest(t, t.TempDir(), disks)
	for _, n := range []string{"a", "b"} {
		if _, err := s.Create("alice", n, 0); err != nil {
			t.Fatal(err)
		}
	}
	uses, err := s.Acquire("alice", "sb1", []string{"a", "b"})
	if err != nil || len(uses) != 2 || uses[0].Name != "a" || uses[1].Name != "b" || uses[0].Dir == uses[1].Dir {
		t.Fatalf("acquire = %+v, %v", uses, err)
	}
	if _, err := s.Acquire("alice", "sb2", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if disks.Mounts() != 2 {
		t.Fatalf("%d mounts, want 2", disks.Mounts())
	}
	info, _ := s.Get("alice", "a")
	if !slices.Equal(info.Users, []string{"sb1", "sb2"}) {
		t.Fatalf("users of a = %v", info.Users)
	}
	err = s.Delete("alice", "a")
	wantCode(t, err, errdefs.CodeVolumeInUse)
	s.Release("sb1")
	if disks.Mounts() != 1 {
		t.Fatalf("%d mounts after sb1's release, want a's alone", disks.Mounts())
	}
	wantCode(t, s.Delete("alice", "a"), errdefs.CodeVolumeInUse)
	if err := s.Delete("alice", "b"); err != nil {
		t.Fatalf("b has no user left: %v", err)
	}
	s.Release("sb2")
	if disks.Mounts() != 0 {
		t.Fatalf("%d mounts after every release", disks.Mounts())
	}
	if err := s.Delete("alice", "a"); err != nil {
		t.Fatal(err)
	}
	// One unknown name takes nothing.
	if _, err := s.Create("alice", "c", 0); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire("alice", "sb3", []string{"c", "nope"})
	wantCode(t, err, errdefs.CodeNoVolume)
	if disks.Mounts() != 0 {
		t.Fatal("a failed acquire left a mount")
	}
	if err := s.Delete("alice", "c"); err != nil {
		t.Fatalf("a failed acquire held the volume: %v", err)
	}
}

// TestReopenKeepsVolumes: records and data survive a restart; leftovers
// of a crash (a disk without record, a mount point) are cleaned up.
func TestReopenKeepsVolumes(t *testing.T) {
	dir := t.TempDir()
	disks := volumestest.New()
	s := openTest(t, dir, disks)
	if _, err := s.Create("alice", "data", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire("alice", "sb1", []string{"data"}); err != nil {
		t.Fatal(err)
	}
	// A crash: nothing closed; a stray disk file and mount point left.
	stray := filepath.Join(dir, "disks", "stray.ext4")
	if err := os.WriteFile(stray, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, dir, disks)
	if disks.Mounts() != 0 {
		t.Fatalf("reopen left %d mounts", disks.Mounts())
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray disk kept: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "mnt")); len(left) != 0 {
		t.Fatalf("mount points left: %v", left)
	}
	info, err := s2.Get("alice", "data")
	if err != nil || info.SizeMB != 100 || len(info.Users) != 0 {
		t.Fatalf("after reopen: %+v, %v", info, err)
	}
	if err := s2.Delete("alice", "data"); err != nil {
		t.Fatalf("a user of the old daemon holds it: %v", err)
	}
	s3 := openTest(t, dir, disks)
	if l := s3.List("alice"); len(l) != 0 {
		t.Fatalf("deleted volume back after reopen: %v", names(l))
	}
}

func TestCloseUnmountsEverything(t *testing.T) {
	disks := volumestest.New()
	s := openTest(t, t.TempDir(), disks)
	for _, n := range []string{"a", "b"} {
		if _, err := s.Create("alice", n, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Acquire("alice", "sb1", []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if disks.Mounts() != 0 {
		t.Fatalf("%d mounts after Close", disks.Mounts())
	}
	_, err := s.Acquire("alice", "sb2", []string{"a"})
	wantCode(t, err, errdefs.CodeShuttingDown)
}

// TestUnavailableHost: without loop devices creates and mounts are S266
// with the reason; listing and deleting still work.
func TestUnavailableHost(t *testing.T) {
	dir := t.TempDir()
	disks := volumestest.New()
	s := openTest(t, dir, disks)
	if _, err := s.Create("alice", "data", 0); err != nil {
		t.Fatal(err)
	}
	disks.Broken = errors.New("no loop devices")
	s = openTest(t, dir, disks)
	_, err := s.Create("alice", "more", 0)
	wantCode(t, err, errdefs.CodeNoVolumes)
	_, err = s.Acquire("alice", "sb1", []string{"data"})
	wantCode(t, err, errdefs.CodeNoVolumes)
	if l := s.List("alice"); len(l) != 1 {
		t.Fatalf("list = %v", names(l))
	}
	if err := s.Delete("alice", "data"); err != nil {
		t.Fatal(err)
	}
}

// TestFailedMakeLeavesNothing: a mkfs that fails takes its name back.
func TestFailedMakeLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	disks := volumestest.New()
	disks.MakeErr = errors.New("mkfs failed")
	s := openTest(t, dir, disks)
	if _, err := s.Create("alice", "data", 0); err == nil {
		t.Fatal("create succeeded")
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "disks")); len(left) != 0 {
		t.Fatalf("disks left: %v", left)
	}
	disks.MakeErr = nil
	if _, err := s.Create("alice", "data", 0); err != nil {
		t.Fatalf("name still taken: %v", err)
	}
}
