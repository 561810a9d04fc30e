package volumesvc

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

// TestVolumeService: each owner sees only its own volumes; a volume in
// use cannot be deleted; without a store every call is S266.
func TestVolumeService(t *testing.T) {
	vols, err := volumes.Open(volumes.Options{Dir: filepath.Join(t.TempDir(), "volumes"), DefaultSizeMB: 64, MaxSizeMB: 1024, Disks: volumestest.New()})
	if err != nil {
		t.Fatal(err)
	}
	s := New(vols)
	alice, bob := auth.WithOwner(context.Background(), "alice"), auth.WithOwner(context.Background(), "bob")
	if info, err := s.CreateVolume(alice, api.VolumeCreateRequest{Name: "data", SizeMB: 8}); err != nil || info.Name != "data" || info.SizeMB != 8 || info.CreatedAt == "" {
		t.Fatalf("create: %+v, %v", info, err)
	}
	if _, err := s.GetVolume(bob, api.VolumeRequest{Name: "data"}); !errdefs.Is(err, errdefs.CodeNoVolume) {
		t.Errorf("another owner's volume: %v, want S260", err)
	}
	if list, err := s.ListVolumes(bob, api.VolumeListRequest{}); err != nil || list.Volumes == nil || len(list.Volumes) != 0 {
		t.Errorf("another owner's list: %+v, %v", list, err)
	}
	if _, err := vols.Acquire("alice", "sandbox-1", []string{"data"}); err != nil {
		t.Fatal(err)
	}
	if info, err := s.GetVolume(alice, api.VolumeRequest{Name: "data"}); err != nil || len(info.SandboxIDs) != 1 || info.SandboxIDs[0] != "sandbox-1" {
		t.Errorf("get: %+v, %v", info, err)
	}
	if _, err := s.DeleteVolume(alice, api.VolumeRequest{Name: "data"}); !errdefs.Is(err, errdefs.CodeVolumeInUse) {
		t.Errorf("delete of a volume in use: %v, want S262", err)
	}
	vols.Release("sandbox-1")
	if resp, err := s.DeleteVolume(alice, api.VolumeRequest{Name: "data"}); err != nil || !resp.Deleted {
		t.Errorf("delete: %+v, %v", resp, err)
	}
	if list, err := s.ListVolumes(alice, api.VolumeListRequest{}); err != nil || len(list.Volumes) != 0 {
		t.Errorf("list after the delete: %+v, %v", list, err)
	}

	none := New(nil)
	_, err = none.CreateVolume(alice, api.VolumeCreateRequest{Name: "data"})
	if !errdefs.Is(err, errdefs.CodeNoVolumes) {
		t.Errorf("without a store: %v, want S266", err)
	}
	if _, err := none.ListVolumes(alice, api.VolumeListRequest{}); !errdefs.Is(err, errdefs.CodeNoVolumes) {
		t.Errorf("list without a store: %v, want S266", err)
	}
}
