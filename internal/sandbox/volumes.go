package sandbox

// Volumes: their mounts at create (the owner's volumes as functions are
// internal/sandbox/volumesvc). A create's volumes are checked before any side effect,
// acquired (mounted on the host, and held against deletion) under the new
// sandbox's id just before it boots, handed to the runtime as bind mounts,
// and released once its teardown has destroyed the instance. A sandbox
// with volumes cannot be checkpointed (snapshot, fork, hibernate): a
// restore would bring back its memory's view of files that others may
// have changed since; it starts from no snapshot and no warm pool sandbox
// either.

import (
	"context"
	"fmt"
	"path"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// maxMounts bounds the volumes of one sandbox.
const maxMounts = 16

// mounter mounts creates' volumes from the daemon's volume store.
type mounter struct {
	// store is nil when the daemon has none.
	store *volumes.Store
}

// check checks a create's volumes before anything happens: names,
// paths (absolute, clean, not reserved, none inside another), that a
// sandbox restored from a checkpoint has none (S265), and that they exist
// (S260; the acquire, just before the boot, has the last word); it is
// S266 when the daemon has no volume store.
func (v mounter) check(ctx context.Context, req api.CreateRequest, from *Origin) error {
	if len(req.Volumes) == 0 {
		return nil
	}
	if v.store == nil {
		return volumes.NoStore()
	}
	if from != nil && from.Checkpoint != "" {
		return errdefs.New(errdefs.CodeVolumeRefused, "a sandbox restored from a snapshot cannot mount volumes").
			WithFix(map[string]any{"volumes": nil}, "create it without volumes, or boot a new sandbox with them")
	}
	if err := validateMounts(req.Volumes); err != nil {
		return err
	}
	return v.store.Check(auth.OwnerFrom(ctx), volumeNames(req.Volumes))
}

// volumeNames are the names of mounts, in order.
func volumeNames(mounts []api.VolumeMount) []string {
	names := make([]string, len(mounts))
	for i, v := range mounts {
		names[i] = v.Name
	}
	return names
}

// validateMounts is mounter.check's check of names and paths.
func validateMounts(mounts []api.VolumeMount) error {
	if len(mounts) > maxMounts {
		return errdefs.New(errdefs.CodeVolumeMount, "a sandbox mounts at most %d volumes, got %d", maxMounts, len(mounts))
	}
	for i, v := range mounts {
		if err := volumes.CheckName(v.Name); err != nil {
			return err
		}
		if err := checkMountPath(v.Path); err != nil {
			return err
		}
		for _, o := range mounts[:i] {
			if within(v.Path, o.Path) || within(o.Path, v.Path) {
				return errdefs.New(errdefs.CodeVolumeMount, "volumes %q at %s and %q at %s overlap: each needs a path of its own, outside the others", o.Name, o.Path, v.Name, v.Path)
			}
		}
	}
	return nil
}

// checkMountPath is S264 unless p is an absolute, clean path that no
// runtime reserves.
func checkMountPath(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return errdefs.New(errdefs.CodeVolumeMount, "volume path %q is not absolute", spec.Clip(p, 128))
	case path.Clean(p) != p:
		return errdefs.New(errdefs.CodeVolumeMount, "volume path %q is not clean; did you mean %q?", spec.Clip(p, 128), spec.Clip(path.Clean(p), 128)).
			WithFix(map[string]any{"path": path.Clean(p)}, "")
	case len(p) > 1024:
		return errdefs.New(errdefs.CodeVolumeMount, "volume path is longer than 1024 bytes")
	case runtime.ReservedPath(p):
		return errdefs.New(errdefs.CodeVolumeMount, "volume path %s is, or is inside, a directory the sandbox's system uses (/, /proc, /dev, /sys, %s)", spec.Clip(p, 128), path.Dir(runtime.AgentPath))
	}
	for _, c := range p {
		if c < ' ' || c == 0x7f {
			return errdefs.New(errdefs.CodeVolumeMount, "volume path %q has a control character", spec.Clip(p, 128))
		}
	}
	return nil
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

// acquire mounts rec's volumes for it and sets the bind mounts its
// runtime spec carries; the teardown of its sandbox releases them.
func (v mounter) acquire(rec *record) error {
	if len(rec.Volumes) == 0 {
		return nil
	}
	uses, err := v.store.Acquire(rec.Owner, rec.ID, volumeNames(rec.Volumes))
	if err != nil {
		return err
	}
	rec.mounts = make([]runtime.Mount, len(uses))
	for i, u := range uses {
		rec.mounts[i] = runtime.Mount{Source: u.Dir, Destination: rec.Volumes[i].Path, ReadOnly: rec.Volumes[i].ReadOnly}
	}
	return nil
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
	if len(sb.rec.Volumes) == 0 {
		return nil
	}
	return errdefs.New(errdefs.CodeVolumeRefused, "sandbox %s mounts volumes: it cannot be %s (its restore would bring back a view of files that other sandboxes may have changed)", sb.rec.ID, what).
		WithFix(nil, fmt.Sprintf("stop it instead; its volumes keep their data (%d mounted)", len(sb.rec.Volumes)))
}
