package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Volumes keeps the owners' named volumes.
type Volumes interface {
	CreateVolume(ctx context.Context, req api.VolumeCreateRequest) (api.VolumeInfo, error)
	ListVolumes(ctx context.Context, req api.VolumeListRequest) (api.VolumeListResponse, error)
	GetVolume(ctx context.Context, req api.VolumeRequest) (api.VolumeInfo, error)
	DeleteVolume(ctx context.Context, req api.VolumeRequest) (api.VolumeDeleteResponse, error)
}

// registerVolumes adds sandbox::volume::*, when the table has Volumes.
func registerVolumes(t *Table) {
	v := t.deps.Volumes
	if v == nil {
		return
	}
	add(t, api.FnVolumeCreate, "Create a named volume of size_mb: a file system that outlives sandboxes, mounted at create with volumes: [{name, path, read_only}]", v.CreateVolume)
	add(t, api.FnVolumeList, "List your volumes", v.ListVolumes)
	add(t, api.FnVolumeGet, "Describe a volume: size, bytes used and available, the live sandboxes that mount it", v.GetVolume)
	add(t, api.FnVolumeDelete, "Delete a volume and its data; refused while a live sandbox mounts it", v.DeleteVolume)
	registerVolumeContent(t) // issue 40: sandbox::volume::fs::*
}
