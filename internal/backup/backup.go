// Package backup writes and restores an archive of a daemon's data dir
// (issue 41: 5): the core's metadata store (hutch.db: sandboxes,
// snapshots, templates, networks), the checkpoint directory (snapshots
// and template layers), the volumes' records and, when asked, their
// disks, and the dir's format file (internal/datadir).
//
// The archive is a gzipped tar. Its first entry is the manifest
// (backup.json), so a restore refuses an archive of a newer format
// before it writes anything; its last is an end marker, so a truncated
// archive (a backup that failed part way) is refused too. The store is
// copied in one read transaction of the running daemon's own handle
// (DB), a consistent copy; snapshots and layers are never changed once
// recorded. A volume's disk in use by a sandbox is copied as it is on
// disk at that moment (crash-consistent, as a power cut would leave it).
package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/internal/datadir"
	"github.com/hutch-dev/hutch/internal/sandbox/records"
)

// Names inside the data dir and the archive.
const (
	manifestName = "backup.json"
	endName      = "backup.end"
	storeName    = "hutch.db"
	snapshotsDir = "snapshots" // sandbox.CheckpointDir
	volumesDir   = "volumes"
	volumesFile  = "volumes/volumes.json"
	disksDir     = "volumes/disks"
)

// Manifest describes an archive.
type Manifest struct {
	// Format is the data dir format the archive's stores are written in.
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	// Volumes says the volumes' disks are in the archive.
	Volumes bool `json:"volumes"`
}

// Source is what a backup reads.
type Source struct {
	// DataDir is the daemon's data dir.
	DataDir string
	// DB writes a consistent copy of the running daemon's hutch.db
	// (records.Bucket.WriteDB).
	DB func(io.Writer) (int64, error)
	// Volumes includes the volumes' disks.
	Volumes bool
}

// Write writes the archive of src to w.
func Write(w io.Writer, src Source) error {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	man, _ := json.Marshal(Manifest{Format: datadir.Current, CreatedAt: time.Now().UTC(), Volumes: src.Volumes})
	if err := addBytes(tw, manifestName, man); err != nil {
		return err
	}
	var db bytes.Buffer
	if _, err := src.DB(&db); err != nil {
		return fmt.Errorf("copying the metadata store: %w", err)
	}
	if err := addBytes(tw, storeName, db.Bytes()); err != nil {
		return err
	}
	for _, name := range []string{datadir.FormatFile, volumesFile} {
		if err := addFile(tw, src.DataDir, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	dirs := []string{snapshotsDir}
	if src.Volumes {
		dirs = append(dirs, disksDir)
	}
	for _, d := range dirs {
		if err := addTree(tw, src.DataDir, d); err != nil {
			return err
		}
	}
	if err := addBytes(tw, endName, nil); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// addFile adds regular file name (slash-separated, under dir).
func addFile(tw *tar.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	// A file that shrinks under the copy fails it rather than padding.
	_, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
	return err
}

// addTree adds the regular files and directories under dir/root, but
// not the "tmp-" entries of work in progress (snapsvc's tempDir).
func addTree(tw *tar.Writer, dir, root string) error {
	base := filepath.Join(dir, filepath.FromSlash(root))
	err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed under the walk (a snapshot deleted)
			}
			return err
		}
		if strings.HasPrefix(e.Name(), "tmp-") {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case e.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700})
		case e.Type().IsRegular():
			if err := addFile(tw, dir, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Summary is what a restore brought back.
type Summary struct {
	Manifest
	Snapshots, Templates, Volumes int
	// Stopped are the sandboxes that ran when the backup was made; the
	// daemon that opens the dir lists them as stopped.
	Stopped int
	// VolumesWithoutData are the volumes whose disks the archive does not
	// hold (a backup without --volumes), which the daemon would forget:
	// the caller makes them anew, empty, at DiskPath (MakeEmptyDisk).
	VolumesWithoutData []Volume
}

// Volume is a volume of a restored dir.
type Volume struct {
	Name   string `json:"name"`
	SizeMB uint64 `json:"size_mb"`
	// DiskPath is where its disk goes.
	DiskPath string `json:"-"`
}

// Restore unpacks the archive r into dir, which must be missing or
// empty. An archive of a newer format, a truncated one and one whose
// names lead out of dir are refused; what a refused restore wrote is
// removed.
func Restore(r io.Reader, dir string) (sum Summary, err error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return sum, fmt.Errorf("data dir %s is not empty: restore onto a new or empty dir", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return sum, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return sum, err
	}
	defer func() {
		if err != nil {
			clearDir(dir)
		}
	}()
	gz, err := gzip.NewReader(r)
	if err != nil {
		return sum, fmt.Errorf("not a hutch backup: %w", err)
	}
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	if err != nil || h.Name != manifestName || h.Size > 1<<16 {
		return sum, fmt.Errorf("not a hutch backup: no %s first", manifestName)
	}
	raw, err := io.ReadAll(tr)
	if err != nil {
		return sum, err
	}
	if err := json.Unmarshal(raw, &sum.Manifest); err != nil {
		return sum, fmt.Errorf("not a hutch backup: %s: %w", manifestName, err)
	}
	if sum.Format > datadir.Current {
		return sum, fmt.Errorf("the backup is of data dir format %d, newer than this hutch's %d (made by a later release): restore it with that release or a newer one", sum.Format, datadir.Current)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return sum, err
	}
	defer root.Close()
	ended := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sum, fmt.Errorf("reading the backup: %w", err)
		}
		if ended {
			return sum, fmt.Errorf("the backup holds %s after its end", h.Name)
		}
		if h.Name == endName {
			ended = true
			continue
		}
		if err := extract(root, tr, h); err != nil {
			return sum, err
		}
	}
	if !ended {
		return sum, errors.New("the backup is truncated (no end marker): it was not written to its end")
	}
	return sum, count(dir, &sum)
}

// extract writes entry h into root; os.Root refuses names leading out.
func extract(root *os.Root, tr *tar.Reader, h *tar.Header) error {
	name := path.Clean(h.Name)
	switch h.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o700)
	case tar.TypeReg:
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("restoring %s: %w", h.Name, err)
			}
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("restoring %s: %w", h.Name, err)
		}
		_, err = io.Copy(f, tr)
		return errors.Join(err, f.Close())
	default:
		return fmt.Errorf("restoring %s: entries of type %q are not part of a hutch backup", h.Name, h.Typeflag)
	}
}

// count fills sum from the restored store and volume records.
func count(dir string, sum *Summary) error {
	db, err := records.Open(filepath.Join(dir, storeName), "sandboxes", "snapshots", "templates")
	if err != nil {
		return err
	}
	defer db.Close()
	n := func(b string) (c int, err error) {
		err = db.In(b).Each(func(string, []byte) error { c++; return nil })
		return
	}
	if sum.Snapshots, err = n("snapshots"); err != nil {
		return err
	}
	if sum.Templates, err = n("templates"); err != nil {
		return err
	}
	err = db.In("sandboxes").Each(func(_ string, v []byte) error {
		var rec struct {
			Stopped bool `json:"stopped"`
		}
		if json.Unmarshal(v, &rec) == nil && !rec.Stopped {
			sum.Stopped++
		}
		return nil
	})
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(volumesFile)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var vols struct {
		Volumes []struct {
			ID string `json:"id"`
			Volume
		} `json:"volumes"`
	}
	if err := json.Unmarshal(raw, &vols); err != nil {
		return fmt.Errorf("reading the restored volume records: %w", err)
	}
	for _, v := range vols.Volumes {
		v.DiskPath = filepath.Join(dir, filepath.FromSlash(disksDir), v.ID+".ext4")
		if v.ID == "" || strings.ContainsAny(v.ID, `/\`) || v.ID == ".." {
			return fmt.Errorf("the restored volume records hold a bad id %q", v.ID)
		}
		if _, err := os.Stat(v.DiskPath); err != nil {
			sum.VolumesWithoutData = append(sum.VolumesWithoutData, v.Volume)
			continue
		}
		sum.Volumes++
	}
	return nil
}

// clearDir removes what a failed restore wrote into dir, leaving dir.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
