package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/layertree"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Shared layers (issue 39). Spec.UpperLayer is either a tar file, which
// gVisor loads into the sandbox's own writable layer at boot (the rootfs
// tar annotation: a copy per sandbox), or a directory, a layer tree
// (layertree.Unpack) that every sandbox of a template shares: the bundle
// mounts a read-only host overlayfs of the tree over the image at
// <bundle>/base, and that is the root runsc serves through its gofer,
// with runsc's own --overlay2 writable layer on top as always. Nothing of
// the tree is copied per sandbox; the host's page cache holds its files
// once. Teardown unmounts it with the rest of the bundle.
//
// runsc refuses a restore whose spec differs from the boot's, and a
// restored sandbox must see the same lower files: a checkpoint of a
// sandbox booted on a tree names it in checkpointLayerFile, and a restore
// without an UpperLayer of its own takes it from there (a hibernation, a
// fork or a snapshot of a template's sandbox).

// baseDir is the bundle's mount point of the tree over the image; it
// sorts before bindsDir, so that teardown unmounts the mount points'
// overlay above it first.
const baseDir = "base"

// checkpointLayerFile names, in a checkpoint directory, the layer tree its
// sandbox booted on.
const checkpointLayerFile = layertree.CheckpointNote

// layerTree is spec's shared layer tree: its UpperLayer when that is a
// directory, else "".
func layerTree(spec runtime.Spec) string {
	if spec.UpperLayer == "" {
		return ""
	}
	if fi, err := os.Stat(spec.UpperLayer); err == nil && fi.IsDir() {
		return spec.UpperLayer
	}
	return ""
}

// layerTar is spec's layer tar file, which gVisor loads at boot: its
// UpperLayer when that is not a tree.
func layerTar(spec runtime.Spec) string {
	if layerTree(spec) != "" {
		return ""
	}
	return spec.UpperLayer
}

// mountBase mounts a read-only overlay of tree over image at dir's
// baseDir and returns it.
func mountBase(tree, image, dir string) (string, error) {
	for _, p := range []string{tree, image} {
		if strings.ContainsAny(p, ",:\\") {
			return "", fmt.Errorf("cannot overlay %s: its path has a comma, colon or backslash", p)
		}
	}
	base := filepath.Join(dir, baseDir)
	if err := os.Mkdir(base, 0o700); err != nil {
		return "", fmt.Errorf("creating the layer's mount point: %w", err)
	}
	opts := "lowerdir=" + tree + ":" + image
	if err := unix.Mount("overlay", base, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mounting the template's layer over the image: %w", err)
	}
	return base, nil
}

// saveLayerNote records in checkpoint directory dir the tree the sandbox
// booted on (none: nothing).
func saveLayerNote(dir, tree string) error {
	if tree == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, checkpointLayerFile), []byte(tree), 0o600)
}

// layerNote is the tree checkpoint directory dir's sandbox booted on, ""
// for none. A tree that is gone fails the restore with a clear error.
func layerNote(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointLayerFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	tree := string(b)
	if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the checkpoint was taken of a sandbox on a template's files (%s) that are gone: its template was deleted or rebuilt", filepath.Base(tree))
	}
	return tree, nil
}
