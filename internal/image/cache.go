package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/runtime"
)

// Paths inside a rootfs that every image gets: the runtime bind-mounts the
// agent binary over agentPath (runtime.AgentPath, made relative).
var (
	agentPath = strings.TrimPrefix(runtime.AgentPath, "/")
	agentDir  = path.Dir(agentPath)
)

// cache is the on-disk, content-addressed image cache (see the package
// documentation for its layout). It is safe for concurrent use by several
// goroutines and processes: writers of one id exclude each other with a
// file lock.
type cache struct {
	dir string
}

func (c cache) imagesDir() string           { return filepath.Join(c.dir, "images") }
func (c cache) tmpDir() string              { return filepath.Join(c.dir, "tmp") }
func (c cache) locksDir() string            { return filepath.Join(c.dir, "locks") }
func (c cache) entryDir(id string) string   { return filepath.Join(c.imagesDir(), id) }
func (c cache) lockPath(id string) string   { return filepath.Join(c.locksDir(), id+".lock") }
func entryRootfs(entry string) string       { return filepath.Join(entry, "rootfs") }
func entryMetadata(entry string) string     { return filepath.Join(entry, "image.json") }
func (c cache) rootfsOf(id string) string   { return entryRootfs(c.entryDir(id)) }
func (c cache) tmpEntry(id string) string   { return filepath.Join(c.tmpDir(), id) }
func (c cache) metadataOf(id string) string { return entryMetadata(c.entryDir(id)) }

// open creates the cache's directories, or tightens the modes of an
// existing cache's. Root filesystems keep their setuid files, so no other
// host user may reach them: images/ is root's alone. The cache dir and
// tmp/ are searchable but not listable so that apt's unprivileged _apt
// user can reach the lists directory of a preset build.
func (c cache) open() error {
	if err := os.MkdirAll(c.dir, 0o711); err != nil {
		return fmt.Errorf("creating image cache: %w", err)
	}
	for _, d := range []struct {
		path string
		perm fs.FileMode
	}{{c.dir, 0o711}, {c.imagesDir(), 0o700}, {c.tmpDir(), 0o711}, {c.locksDir(), 0o700}, {c.refsDir(), 0o700}} {
		if err := os.Mkdir(d.path, d.perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating image cache: %w", err)
		}
		if err := os.Chmod(d.path, d.perm); err != nil {
			return fmt.Errorf("creating image cache: %w", err)
		}
	}
	return nil
}

// LoadCached reads image id from the cache at dir without opening a Store:
// for a reader beside the daemon (the benchmark imports its root
// filesystem into Docker).
func LoadCached(dir, id string) (*Image, error) { return cache{dir: dir}.load(id) }

// load returns the published image id. The error wraps fs.ErrNotExist
// when there is none.
func (c cache) load(id string) (*Image, error) {
	b, err := os.ReadFile(c.metadataOf(id))
	if err != nil {
		return nil, fmt.Errorf("loading image %s: %w", id, err)
	}
	var img Image
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("loading image %s: %w", id, err)
	}
	if img.ID != id {
		return nil, fmt.Errorf("loading image %s: image.json names id %q", id, img.ID)
	}
	img.Rootfs = c.rootfsOf(id)
	if st, err := os.Stat(img.Rootfs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("loading image %s: rootfs is not a directory", id)
	}
	return &img, nil
}

// lock takes the build lock of id, waiting for another holder (in this or
// another process) until ctx ends. The returned func releases it.
func (c cache) lock(ctx context.Context, id string, log *slog.Logger) (unlock func(), err error) {
	logged := false
	for {
		unlock, ok, err := c.tryLock(id)
		if err != nil || ok {
			return unlock, err
		}
		if !logged {
			log.Info("waiting for another build of the image to finish")
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the build lock: %w", context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tryLock takes the build lock of id if it is free; ok reports whether it was.
func (c cache) tryLock(id string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(c.lockPath(id), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("opening build lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("taking build lock: %w", err)
	}
	return func() { f.Close() }, true, nil // closing releases the flock
}

// removeLeftovers deletes what crashed builds left in tmp/, skipping
// builds that are still running (their lock is held).
func (c cache) removeLeftovers(log *slog.Logger) error {
	entries, err := os.ReadDir(c.tmpDir())
	if err != nil {
		return fmt.Errorf("listing image cache leftovers: %w", err)
	}
	for _, e := range entries {
		unlock, ok, err := c.tryLock(e.Name())
		if err != nil {
			return err
		}
		if !ok {
			continue // another store is building it right now
		}
		err = os.RemoveAll(filepath.Join(c.tmpDir(), e.Name()))
		unlock()
		if err != nil {
			return fmt.Errorf("removing image cache leftover %s: %w", e.Name(), err)
		}
		log.Info("removed half-built image left by an interrupted build", "id", e.Name())
	}
	return nil
}

// create builds image img.ID with fill, which must create the root
// filesystem at the directory it is given, and publishes it atomically. The
// caller holds the build lock of img.ID. On error nothing is left behind.
func (c cache) create(img Image, fill func(rootfs string) error) (_ *Image, err error) {
	tmp := c.tmpEntry(img.ID)
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("clearing build directory: %w", err)
	}
	if err := os.Mkdir(tmp, 0o711); err != nil {
		return nil, fmt.Errorf("creating build directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	// A directory under images/ without valid metadata is not an image
	// (only tampering makes one); clear it so the rename below can succeed.
	if err := os.RemoveAll(c.entryDir(img.ID)); err != nil {
		return nil, fmt.Errorf("clearing invalid cache entry: %w", err)
	}

	rootfs := entryRootfs(tmp)
	if err := fill(rootfs); err != nil {
		return nil, err
	}
	if err := addAgentMountpoint(rootfs); err != nil {
		return nil, err
	}
	size, err := treeSize(rootfs)
	if err != nil {
		return nil, fmt.Errorf("measuring rootfs: %w", err)
	}
	img.SizeBytes = size
	img.BuiltAt = time.Now().UTC()
	b, err := json.MarshalIndent(&img, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding image metadata: %w", err)
	}
	if err := os.WriteFile(entryMetadata(tmp), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing image metadata: %w", err)
	}
	// Flush the tree to disk before the rename makes it visible, so a power
	// loss cannot publish an image with empty files.
	if err := syncFS(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, c.entryDir(img.ID)); err != nil {
		return nil, fmt.Errorf("publishing image: %w", err)
	}
	if err := syncFS(c.imagesDir()); err != nil {
		return nil, err
	}
	img.Rootfs = c.rootfsOf(img.ID)
	return &img, nil
}

// syncFS flushes the filesystem holding path.
func syncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("syncing image cache: %w", err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncing image cache: %w", err)
	}
	return nil
}

// addAgentMountpoint creates /.hutch (0755) and the empty regular file
// /.hutch/hutch-agent (0755) in rootfs, replacing whatever else has those
// names. Nothing is followed: a symlink planted by an image is removed, not
// written through.
func addAgentMountpoint(rootfs string) error {
	dir := filepath.Join(rootfs, agentDir)
	if st, err := os.Lstat(dir); err == nil && !st.IsDir() {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("adding agent mountpoint: %w", err)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("adding agent mountpoint: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("adding agent mountpoint: %w", err)
	}
	file := filepath.Join(rootfs, agentPath)
	if err := os.RemoveAll(file); err != nil {
		return fmt.Errorf("adding agent mountpoint: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o755)
	if err != nil {
		return fmt.Errorf("adding agent mountpoint: %w", err)
	}
	if err := f.Chmod(0o755); err != nil {
		f.Close()
		return fmt.Errorf("adding agent mountpoint: %w", err)
	}
	return f.Close()
}

// treeSize is the apparent size of the regular files and symlinks under
// root, counting hard-linked files once.
func treeSize(root string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += info.Size()
		return nil
	})
	return total, err
}
