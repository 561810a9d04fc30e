package volumesvc

// A create's volume mounts, for the core's mounter
// (internal/sandbox/volumes.go): their check before any side effect,
// their acquire as the runtime's bind mounts, and the refusal to
// checkpoint a sandbox that has them.

import (
	"fmt"
	"path"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/volumes"
)

// MaxMounts bounds the volumes of one sandbox.
const MaxMounts = 16

// CheckMounts checks a create's mounts for owner before anything
// happens: names, paths (absolute, clean, not reserved, none inside
// another), that a sandbox restored from a checkpoint has none (S265),
// and that they exist in store (S260; the acquire, just before the boot,
// has the last word); it is S266 when store is nil.
func CheckMounts(store *volumes.Store, owner string, mounts []api.VolumeMount, restored bool) error {
	if len(mounts) == 0 {
		return nil
	}
	if store == nil {
		return volumes.NoStore()
	}
	if restored {
		return errdefs.New(errdefs.CodeVolumeRefused, "a sandbox restored from a snapshot cannot mount volumes").
			WithFix(map[string]any{"volumes": nil}, "create it without volumes, or boot a new sandbox with them")
	}
	if err := ValidateMounts(mounts); err != nil {
		return err
	}
	return store.Check(owner, names(mounts))
}

// names are the names of mounts, in order.
func names(mounts []api.VolumeMount) []string {
	names := make([]string, len(mounts))
	for i, v := range mounts {
		names[i] = v.Name
	}
	return names
}

// ValidateMounts is CheckMounts' check of names and paths.
func ValidateMounts(mounts []api.VolumeMount) error {
	if len(mounts) > MaxMounts {
		return errdefs.New(errdefs.CodeVolumeMount, "a sandbox mounts at most %d volumes, got %d", MaxMounts, len(mounts))
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

// AcquireMounts mounts sandbox id's volumes (its owner's) from store and
// holds them against deletion; it returns the bind mounts its runtime
// spec carries. store.Release(id) gives them back.
func AcquireMounts(store *volumes.Store, owner, id string, mounts []api.VolumeMount) ([]runtime.Mount, error) {
	uses, err := store.Acquire(owner, id, names(mounts))
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Mount, len(uses))
	for i, u := range uses {
		out[i] = runtime.Mount{Source: u.Dir, Destination: mounts[i].Path, ReadOnly: mounts[i].ReadOnly}
	}
	return out, nil
}

// RefuseCheckpoint is S265 for a checkpoint (what) of sandbox id, which
// mounts n volumes; nil when n is 0.
func RefuseCheckpoint(id string, n int, what string) error {
	if n == 0 {
		return nil
	}
	return errdefs.New(errdefs.CodeVolumeRefused, "sandbox %s mounts volumes: it cannot be %s (its restore would bring back a view of files that other sandboxes may have changed)", id, what).
		WithFix(nil, fmt.Sprintf("stop it instead; its volumes keep their data (%d mounted)", n))
}
