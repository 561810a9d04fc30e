package microvm

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// rootDiskName is the image's disk, cached beside its root filesystem
// directory (so that it goes when the image does).
const rootDiskName = "rootfs.microvm.ext4"

// Prepare makes the image's read-only disk, once per image: an ext4 file
// system (mkfs.ext4 -d, e2fsprogs) holding the root filesystem directory,
// cached beside it. Builds are serialized.
func (r *Runtime) Prepare(ctx context.Context, img runtime.ImageRef) (runtime.Artifact, error) {
	dir, err := runtime.DirArtifact(img.Rootfs)
	if err != nil {
		return runtime.Artifact{}, err
	}
	out := filepath.Join(filepath.Dir(dir.Path), rootDiskName)
	r.prepareMu.Lock()
	defer r.prepareMu.Unlock()
	if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
		return runtime.Artifact{Kind: runtime.ArtifactBlock, Path: out}, nil
	}
	if err := buildRootDisk(ctx, dir.Path, out); err != nil {
		return runtime.Artifact{}, fmt.Errorf("making the microVM disk of image %s: %w", img.ID, err)
	}
	return runtime.Artifact{Kind: runtime.ArtifactBlock, Path: out}, nil
}

// buildRootDisk writes an ext4 image of rootfs to out (through a
// temporary file beside it). It has no journal (it is only ever mounted
// read-only) and room for what rootfs holds plus a fifth.
func buildRootDisk(ctx context.Context, rootfs, out string) error {
	bytes, inodes, err := treeSize(rootfs)
	if err != nil {
		return err
	}
	sizeMB := (bytes+bytes/5)>>20 + 32
	tmp, err := os.CreateTemp(filepath.Dir(out), ".tmp-rootdisk-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Truncate(int64(sizeMB) << 20); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0",
		"-b", "4096", "-N", strconv.FormatUint(inodes+inodes/5+1024, 10), "-L", "hutch-root",
		"-d", rootfs, tmp.Name())
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, runtime.LastLines(string(b), 1, 256))
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// treeSize is the space the files under root take in 4 KiB blocks, and
// their number.
func treeSize(root string) (bytes, count uint64, err error) {
	err = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		count++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		bytes += (uint64(fi.Size()) + 4095) &^ 4095
		if d.IsDir() {
			bytes += 4096
		}
		return nil
	})
	return bytes, count, err
}

// makeWritableDisk makes a sandbox's writable layer: a sparse file of mb
// MiB at path with an empty ext4 file system (no journal: it is discarded
// on stop), so that what the sandbox writes to its root is bounded by mb
// (ENOSPC inside) and takes host disk, not guest memory.
func makeWritableDisk(ctx context.Context, path string, mb uint64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating the writable disk: %w", err)
	}
	err = f.Truncate(int64(mb) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sizing the writable disk: %w", err)
	}
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0",
		"-E", "lazy_itable_init=1,nodiscard", path)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 of the writable disk: %w: %s", err, runtime.LastLines(string(b), 1, 256))
	}
	return nil
}
