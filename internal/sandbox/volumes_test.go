package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

// withVolumes gives m a volume store over stand-in disks.
func withVolumes(t *testing.T, m *Manager) *volumestest.Disks {
	t.Helper()
	disks := volumestest.New()
	s, err := volumes.Open(volumes.Options{Dir: filepath.Join(t.TempDir(), "volumes"), DefaultSizeMB: 64, MaxSizeMB: 1024, Disks: disks})
	if err != nil {
		t.Fatal(err)
	}
	m.vols = mounter{s}
	return disks
}

// TestVolumesInProcess: a create mounts its owner's volumes (bind mounts
// in the runtime's spec), another owner's is not found, a mounted volume
// cannot be deleted and is released by the sandbox's stop, and a
// sandbox with volumes cannot be checkpointed.
func TestVolumesInProcess(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	disks := withVolumes(t, m)
	alice, bob := as("alice"), as("bob")
	if _, err := volumesvc.New(m.vols.store).CreateVolume(alice, api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	if _, err := volumesvc.New(m.vols.store).CreateVolume(alice, api.VolumeCreateRequest{Name: "ref", SizeMB: 8}); err != nil {
		t.Fatal(err)
	}
	mounts := []api.VolumeMount{{Name: "data", Path: "/data"}, {Name: "ref", Path: "/ref", ReadOnly: true}}

	_, err := m.Create(bob, api.CreateRequest{Image: "python", Volumes: mounts[:1]})
	wantCode(t, err, errdefs.CodeNoVolume)
	_, err = m.Create(alice, api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "nope", Path: "/x"}}})
	wantCode(t, err, errdefs.CodeNoVolume)
	_, err = m.Create(alice, api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "data", Path: "/proc/x"}}})
	wantCode(t, err, errdefs.CodeVolumeMount)
	if len(rt.Instances()) != 0 || disks.Mounts() != 0 {
		t.Fatalf("refused creates left %d instances, %d mounts", len(rt.Instances()), disks.Mounts())
	}

	resp, err := m.Create(alice, api.CreateRequest{Image: "python", Volumes: mounts})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.SandboxID
	insts := rt.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances", len(insts))
	}
	got := insts[0].Spec.Mounts
	if len(got) != 2 || got[0].Destination != "/data" || got[0].ReadOnly || got[1].Destination != "/ref" || !got[1].ReadOnly || got[0].Source == got[1].Source {
		t.Fatalf("spec mounts = %+v", got)
	}
	info, err := m.Get(alice, api.GetRequest{SandboxID: id})
	if err != nil || !slices.Equal(info.Volumes, mounts) {
		t.Fatalf("sandbox info volumes = %+v, %v", info.Volumes, err)
	}
	vol, err := volumesvc.New(m.vols.store).GetVolume(alice, api.VolumeRequest{Name: "data"})
	if err != nil || !slices.Equal(vol.SandboxIDs, []string{id}) || vol.UsedBytes == 0 {
		t.Fatalf("volume = %+v, %v", vol, err)
	}
	_, err = volumesvc.New(m.vols.store).GetVolume(bob, api.VolumeRequest{Name: "data"})
	wantCode(t, err, errdefs.CodeNoVolume)
	_, err = volumesvc.New(m.vols.store).DeleteVolume(alice, api.VolumeRequest{Name: "data"})
	wantCode(t, err, errdefs.CodeVolumeInUse)

	// Neither a snapshot nor a fork: no checkpoint of it is written.
	h, release, err := m.Acquire(alice, id, UseRead)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Checkpoint(t.TempDir())
	release()
	wantCode(t, err, errdefs.CodeVolumeRefused)
	_, err = m.Pause(alice, api.PauseRequest{SandboxID: id, Depth: api.PauseHibernate})
	wantCode(t, err, errdefs.CodeVolumeRefused)

	if _, err := m.Stop(alice, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	if disks.Mounts() != 0 {
		t.Fatalf("%d mounts after the stop", disks.Mounts())
	}
	if _, err := volumesvc.New(m.vols.store).DeleteVolume(alice, api.VolumeRequest{Name: "data"}); err != nil {
		t.Fatalf("delete after the stop: %v", err)
	}
	list, err := volumesvc.New(m.vols.store).ListVolumes(alice, api.VolumeListRequest{})
	if err != nil || len(list.Volumes) != 1 || list.Volumes[0].Name != "ref" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// TestVolumesReleasedOnFailedBoot: a boot that fails gives its volumes
// back.
func TestVolumesReleasedOnFailedBoot(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	disks := withVolumes(t, m)
	alice := as("alice")
	if _, err := volumesvc.New(m.vols.store).CreateVolume(alice, api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	rt.BeforeStart(func(context.Context, runtime.Spec) error { return errors.New("boom") })
	if _, err := m.Create(alice, api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "data", Path: "/data"}}}); err == nil {
		t.Fatal("create succeeded")
	}
	if disks.Mounts() != 0 {
		t.Fatalf("%d mounts after a failed boot", disks.Mounts())
	}
	if _, err := volumesvc.New(m.vols.store).DeleteVolume(alice, api.VolumeRequest{Name: "data"}); err != nil {
		t.Fatalf("a failed boot holds the volume: %v", err)
	}
}

// TestNoVolumeStore: a manager without a store answers S266.
func TestNoVolumeStore(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	_, err := volumesvc.New(m.vols.store).CreateVolume(as("alice"), api.VolumeCreateRequest{Name: "data"})
	wantCode(t, err, errdefs.CodeNoVolumes)
	_, err = m.Create(as("alice"), api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "data", Path: "/data"}}})
	wantCode(t, err, errdefs.CodeNoVolumes)
}
