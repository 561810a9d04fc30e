package sandbox

// Volumes: their mounts at create (the owner's volumes as functions, and
// the mounts' checks, are internal/sandbox/volumesvc). A create's volumes
// are checked before any side effect, acquired (mounted on the host, and
// held against deletion) under the new sandbox's id just before it boots,
// handed to the runtime as bind mounts, and released once its teardown
// has destroyed the instance. A sandbox with volumes cannot be
// checkpointed (snapshot, fork, hibernate): a restore would bring back
// its memory's view of files that others may have changed since; it
// starts from no snapshot and no warm pool sandbox either.

import (
	"context"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// mounter mounts creates' volumes from the daemon's volume store.
type mounter struct {
	// store is nil when the daemon has none.
	store *volumes.Store
}

// check is volumesvc.CheckMounts of a create's volumes.
func (v mounter) check(ctx context.Context, req api.CreateRequest, from *Origin) error {
	return volumesvc.CheckMounts(v.store, auth.OwnerFrom(ctx), req.Volumes, from != nil && from.Checkpoint != "")
}

// acquire mounts rec's volumes for it and sets the bind mounts its
// runtime spec carries; the teardown of its sandbox releases them.
func (v mounter) acquire(rec *record) (err error) {
	if len(rec.Volumes) > 0 {
		rec.mounts, err = volumesvc.AcquireMounts(v.store, rec.Owner, rec.ID, rec.Volumes)
	}
	return err
}

// release gives back what acquire took for sandbox id.
func (v mounter) release(id string) {
	if v.store != nil {
		v.store.Release(id)
	}
}

// refuseCheckpoint is S265 for a checkpoint (what) of a sandbox with
// volumes.
func refuseCheckpoint(sb *sandbox, what string) error {
	return volumesvc.RefuseCheckpoint(sb.rec.ID, len(sb.rec.Volumes), what)
}
