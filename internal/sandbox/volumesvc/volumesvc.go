// Package volumesvc is the volume service: the owner's named volumes
// (internal/volumes) as sandbox::volume::*, and the checks and acquire
// of a create's mounts (mounts.go) for the core's mounter
// (internal/sandbox/volumes.go); this service needs no sandbox.
package volumesvc

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// Service answers sandbox::volume::* (functions.Volumes).
type Service struct{ vols *volumes.Store }

// New is the volume service over vols; nil: the daemon keeps no volumes,
// and every call is S266.
func New(vols *volumes.Store) *Service { return &Service{vols: vols} }

// store is the store, or S266 when the daemon has none.
func (s *Service) store() (*volumes.Store, error) {
	if s.vols == nil {
		return nil, volumes.NoStore()
	}
	return s.vols, nil
}

// CreateVolume is sandbox::volume::create.
func (v *Service) CreateVolume(ctx context.Context, req api.VolumeCreateRequest) (api.VolumeInfo, error) {
	s, err := v.store()
	if err != nil {
		return api.VolumeInfo{}, err
	}
	info, err := s.Create(auth.OwnerFrom(ctx), req.Name, req.SizeMB)
	if err != nil {
		return api.VolumeInfo{}, err
	}
	return volumeInfo(info), nil
}

// ListVolumes is sandbox::volume::list: the caller's volumes by name.
func (v *Service) ListVolumes(ctx context.Context, _ api.VolumeListRequest) (api.VolumeListResponse, error) {
	s, err := v.store()
	if err != nil {
		return api.VolumeListResponse{}, err
	}
	resp := api.VolumeListResponse{Volumes: []api.VolumeInfo{}}
	for _, info := range s.List(auth.OwnerFrom(ctx)) {
		resp.Volumes = append(resp.Volumes, volumeInfo(info))
	}
	return resp, nil
}

// GetVolume is sandbox::volume::get: one volume with what it uses.
func (v *Service) GetVolume(ctx context.Context, req api.VolumeRequest) (api.VolumeInfo, error) {
	s, err := v.store()
	if err != nil {
		return api.VolumeInfo{}, err
	}
	info, err := s.Get(auth.OwnerFrom(ctx), req.Name)
	if err != nil {
		return api.VolumeInfo{}, err
	}
	return volumeInfo(info), nil
}

// DeleteVolume is sandbox::volume::delete: S262 while a live sandbox
// mounts it.
func (v *Service) DeleteVolume(ctx context.Context, req api.VolumeRequest) (api.VolumeDeleteResponse, error) {
	s, err := v.store()
	if err != nil {
		return api.VolumeDeleteResponse{}, err
	}
	if err := s.Delete(auth.OwnerFrom(ctx), req.Name); err != nil {
		return api.VolumeDeleteResponse{}, err
	}
	return api.VolumeDeleteResponse{Name: req.Name, Deleted: true}, nil
}

func volumeInfo(i volumes.Info) api.VolumeInfo {
	return api.VolumeInfo{
		Name:           i.Name,
		SizeMB:         i.SizeMB,
		CreatedAt:      i.CreatedAt.UTC().Format(time.RFC3339),
		UsedBytes:      i.UsedBytes,
		AvailableBytes: i.AvailableBytes,
		// Not the content calls that hold it for a moment (issue 40).
		SandboxIDs: slices.DeleteFunc(slices.Clone(i.Users), func(u string) bool { return strings.HasPrefix(u, contentUser) }),
	}
}
