package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ArtifactKind is the form a runtime boots an image from.
type ArtifactKind string

// The kinds of artifact.
const (
	// ArtifactDir is a root filesystem directory on the host (gVisor).
	ArtifactDir ArtifactKind = "dir"
	// ArtifactBlock is a block image file on the host (a microVM's disk).
	ArtifactBlock ArtifactKind = "block"
)

// Artifact is an image in the form one runtime boots: what Prepare returns
// and Spec.Image carries. It is shared by every sandbox of the image and
// must never be written to.
type Artifact struct {
	Kind ArtifactKind
	// Path is the directory or file on the host, absolute.
	Path string
}

// ImageRef is an image as the image store holds it, for Prepare.
type ImageRef struct {
	// ID is the image's content hash; an artifact made from one ID can be
	// reused for every sandbox of it.
	ID string
	// Rootfs is the image's root filesystem directory, absolute. It has an
	// empty regular file at AgentPath.
	Rootfs string
}

// Preparer is implemented by a Runtime that boots something other than the
// image's root filesystem directory (a VM turns it into a block image,
// once per image ID, and caches it). A runtime without it boots the
// directory as it is.
type Preparer interface {
	Prepare(ctx context.Context, img ImageRef) (Artifact, error)
}

// Prepare makes the artifact rt boots img from: rt's own Prepare, or else
// the image's root filesystem directory.
func Prepare(ctx context.Context, rt Runtime, img ImageRef) (Artifact, error) {
	if p, ok := rt.(Preparer); ok {
		return p.Prepare(ctx, img)
	}
	return DirArtifact(img.Rootfs)
}

// DirArtifact is the directory artifact of rootfs, checked to be a
// directory.
func DirArtifact(rootfs string) (Artifact, error) {
	if rootfs == "" {
		return Artifact{}, errors.New("image has no root filesystem")
	}
	abs, err := filepath.Abs(rootfs)
	if err != nil {
		return Artifact{}, fmt.Errorf("image root filesystem: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Artifact{}, fmt.Errorf("image root filesystem: %w", err)
	}
	if !fi.IsDir() {
		return Artifact{}, fmt.Errorf("image root filesystem %s is not a directory", abs)
	}
	return Artifact{Kind: ArtifactDir, Path: abs}, nil
}
