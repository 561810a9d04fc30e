// Package volumes keeps the owners' named volumes: one allocated file per
// volume (a full host disk fails its create, never a write into it) holding an ext4 file system of the volume's size, so the size is
// a real limit (ENOSPC past it), loop-mounted under the daemon's data dir
// while a sandbox uses it. Records are kept in a JSON file beside the
// disks; a volume's data outlives every sandbox and daemon restarts.
//
// Layout under Options.Dir:
//
//	volumes.json   the records (owner, name, size, id)
//	disks/ID.ext4  each volume's file system
//	mnt/ID         its mount point while mounted
//
// A volume is mounted by the first sandbox that uses it (Acquire) and
// unmounted when the last one releases it, when it is deleted and when
// the store closes; a get that finds it unmounted mounts it for the
// moment of its statfs. Nothing else keeps a loop device or a mount.
package volumes

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/storefmt"
)

// Disks makes, mounts and measures the file systems of volumes.
type Disks interface {
	// Check says why this host cannot make volumes, or nil.
	Check() error
	// Make creates file holding a new, empty file system of sizeMB.
	Make(file string, sizeMB uint64) error
	// Mount mounts the file system of file on directory dir.
	Mount(file, dir string) error
	// Unmount unmounts dir; a dir that is not mounted is not an error.
	Unmount(dir string) error
	// Usage reports what the file system mounted on dir uses and has
	// left, in bytes.
	Usage(dir string) (used, available uint64, err error)
}

// Options configure a Store.
type Options struct {
	// Dir holds the records, disks and mount points.
	Dir string
	// DefaultSizeMB is the size of a volume created without one;
	// MaxSizeMB the largest; MaxPerOwner bounds one owner's volumes
	// (0: no bound).
	DefaultSizeMB, MaxSizeMB uint64
	MaxPerOwner              int
	// Disks makes the file systems; nil is ext4 on loop devices.
	Disks  Disks
	Logger *slog.Logger
}

// record is a volume as kept in volumes.json.
type record struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner,omitempty"`
	Name      string    `json:"name"`
	SizeMB    uint64    `json:"size_mb"`
	CreatedAt time.Time `json:"created_at"`
}

// volume is a record and what the store knows of it now.
type volume struct {
	rec record
	// creating is set while its file system is being made: it is not
	// listed, used or deleted yet.
	creating bool
	mounted  bool
	// users are the sandboxes (or creates in progress) that mount it.
	users map[string]struct{}
}

// Info describes a volume.
type Info struct {
	Name           string
	SizeMB         uint64
	CreatedAt      time.Time
	UsedBytes      uint64
	AvailableBytes uint64
	// Users are the sandboxes that mount it, sorted.
	Users []string
}

// Store keeps the volumes of every owner.
type Store struct {
	opts  Options
	disks Disks
	log   *slog.Logger
	// unavailable says why volumes cannot be made or mounted here.
	unavailable error

	// mu guards vols and the records file.
	mu     sync.Mutex
	vols   map[string]*volume // by key(owner, name)
	closed bool
}

func key(owner, name string) string { return owner + "\x00" + name }

// NoStore is S266: the daemon keeps no volumes.
func NoStore() error {
	return errdefs.New(errdefs.CodeNoVolumes, "this daemon keeps no volumes")
}

// Open loads the records under opts.Dir, removes what a crashed daemon
// left (mounts, disks without a record, records without a disk) and
// checks that the host can make volumes; when it cannot, the store still
// lists and deletes, and Create and Acquire answer S266 with the reason.
func Open(opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Disks == nil {
		opts.Disks = ext4Disks{}
	}
	s := &Store{opts: opts, disks: opts.Disks, log: opts.Logger, vols: map[string]*volume{}}
	for _, d := range []string{opts.Dir, s.disksDir(), s.mntDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := s.disks.Check(); err != nil {
		s.unavailable = err
		s.log.Warn("volumes are unavailable on this host", "err", err)
	}
	recs, err := s.load()
	if err != nil {
		return nil, err
	}
	if err := s.recover(recs); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) disksDir() string         { return filepath.Join(s.opts.Dir, "disks") }
func (s *Store) mntDir() string           { return filepath.Join(s.opts.Dir, "mnt") }
func (s *Store) recordsPath() string      { return filepath.Join(s.opts.Dir, "volumes.json") }
func (s *Store) diskOf(v *volume) string  { return filepath.Join(s.disksDir(), v.rec.ID+".ext4") }
func (s *Store) mountOf(v *volume) string { return filepath.Join(s.mntDir(), v.rec.ID) }

// recordsFormat is the format of volumes.json (storefmt): 0, before
// formats, had no "format" field and the same "volumes"; 1 has the field.
// A file of format 0 is read as it is and written in format 1.
const recordsFormat = 1

// recordsFile is volumes.json.
type recordsFile struct {
	Format  int      `json:"format"`
	Volumes []record `json:"volumes"`
}

// load reads volumes.json; a missing file is no volumes.
func (s *Store) load() ([]record, error) {
	b, err := os.ReadFile(s.recordsPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading volume records: %w", err)
	}
	var file recordsFile
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("reading volume records %s: %w", s.recordsPath(), err)
	}
	if err := storefmt.JSON("volume records "+s.recordsPath(), file.Format, recordsFormat); err != nil {
		return nil, err
	}
	return file.Volumes, nil
}

// recover unmounts every leftover mount point, forgets records whose
// disk is gone and removes disks no record names.
func (s *Store) recover(recs []record) error {
	mps, _ := os.ReadDir(s.mntDir())
	for _, mp := range mps {
		dir := filepath.Join(s.mntDir(), mp.Name())
		if err := s.disks.Unmount(dir); err != nil {
			return fmt.Errorf("unmounting a leftover volume: %w", err)
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing a leftover mount point: %w", err)
		}
	}
	known := map[string]bool{}
	dropped := false
	for _, r := range recs {
		v := &volume{rec: r, users: map[string]struct{}{}}
		if _, err := os.Stat(s.diskOf(v)); err != nil {
			s.log.Warn("forgetting a volume whose disk is gone", "volume", r.Name, "owner", r.Owner, "err", err)
			dropped = true
			continue
		}
		known[r.ID+".ext4"] = true
		s.vols[key(r.Owner, r.Name)] = v
	}
	disks, _ := os.ReadDir(s.disksDir())
	for _, d := range disks {
		if !known[d.Name()] {
			s.log.Info("removing a volume disk no record keeps", "file", d.Name())
			_ = os.Remove(filepath.Join(s.disksDir(), d.Name()))
		}
	}
	if dropped {
		return s.saveLocked()
	}
	return nil
}

// saveLocked writes the records of every volume made (s.mu held, or
// before the store is shared).
func (s *Store) saveLocked() error {
	file := recordsFile{Format: recordsFormat, Volumes: []record{}}
	for _, v := range s.vols {
		if !v.creating {
			file.Volumes = append(file.Volumes, v.rec)
		}
	}
	slices.SortFunc(file.Volumes, func(a, b record) int { return cmp.Compare(a.ID, b.ID) })
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.recordsPath() + ".tmp"
	if err := writeSync(tmp, b); err != nil {
		return fmt.Errorf("writing volume records: %w", err)
	}
	if err := os.Rename(tmp, s.recordsPath()); err != nil {
		return fmt.Errorf("writing volume records: %w", err)
	}
	return nil
}

// writeSync writes b to a new file at path and syncs it.
func writeSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// nameRE is a DNS label.
var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckName is S263 unless name is a DNS label: 1 to 63 lower-case
// letters, digits and hyphens, starting and ending with a letter or digit.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return errdefs.New(errdefs.CodeVolumeInvalid, "volume name %q is not a DNS label: 1 to 63 lower-case letters, digits and hyphens, starting and ending with a letter or digit", clip(name))
	}
	return nil
}

// clip shortens a name from a request for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// notFound is S260 for name, the answer for another owner's volume too.
func notFound(name string) error {
	return errdefs.New(errdefs.CodeNoVolume, "no volume named %q", clip(name)).
		WithFix(nil, "sandbox::volume::list lists your volumes; sandbox::volume::create makes one")
}

// usable is S266 when the host cannot make or mount volumes.
func (s *Store) usable() error {
	if s.unavailable != nil {
		return errdefs.New(errdefs.CodeNoVolumes, "volumes are unavailable on this host: %v", s.unavailable)
	}
	return nil
}

// Create makes owner's volume name of sizeMB (0: the default).
func (s *Store) Create(owner, name string, sizeMB uint64) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	if sizeMB == 0 {
		sizeMB = s.opts.DefaultSizeMB
	}
	if sizeMB < config.MinVolumeMB || sizeMB > s.opts.MaxSizeMB {
		return Info{}, errdefs.New(errdefs.CodeVolumeInvalid, "size_mb must be between %d and %d (volume_max_size_mb), got %d", config.MinVolumeMB, s.opts.MaxSizeMB, sizeMB).
			WithFix(map[string]any{"size_mb": min(max(sizeMB, config.MinVolumeMB), s.opts.MaxSizeMB)}, "")
	}
	if err := s.usable(); err != nil {
		return Info{}, err
	}
	v, err := s.reserve(owner, name, sizeMB)
	if err != nil {
		return Info{}, err
	}
	err = s.disks.Make(s.diskOf(v), sizeMB)
	failpoint.Hit("volume.create.after-disk")
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		v.creating = false
		if err = s.saveLocked(); err != nil {
			v.creating = true
		}
	}
	if err != nil {
		delete(s.vols, key(owner, name))
		_ = os.Remove(s.diskOf(v))
		return Info{}, fmt.Errorf("creating volume %s: %w", name, err)
	}
	s.log.Info("volume created", "volume", name, "owner", owner, "size_mb", sizeMB)
	return v.info(), nil
}

// reserve takes owner's name for a volume being made.
func (s *Store) reserve(owner, name string, sizeMB uint64) (*volume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errdefs.ShuttingDown()
	}
	if _, ok := s.vols[key(owner, name)]; ok {
		return nil, errdefs.New(errdefs.CodeVolumeExists, "a volume named %q exists already", name).
			WithFix(nil, "choose another name, or delete the volume first")
	}
	if n := s.countLocked(owner); s.opts.MaxPerOwner > 0 && n >= s.opts.MaxPerOwner {
		return nil, errdefs.New(errdefs.CodeCapacity, "you have %d volumes, the most max_volumes_per_owner allows", n).
			WithFix(nil, "delete a volume first")
	}
	v := &volume{
		rec:      record{ID: uuid.NewString(), Owner: owner, Name: name, SizeMB: sizeMB, CreatedAt: time.Now().UTC()},
		creating: true,
		users:    map[string]struct{}{},
	}
	s.vols[key(owner, name)] = v
	return v, nil
}

// countLocked counts owner's volumes, those being made included.
func (s *Store) countLocked(owner string) int {
	n := 0
	for _, v := range s.vols {
		if v.rec.Owner == owner {
			n++
		}
	}
	return n
}

// info is v's description without usage.
func (v *volume) info() Info {
	users := make([]string, 0, len(v.users))
	for u := range v.users {
		users = append(users, u)
	}
	slices.Sort(users)
	return Info{Name: v.rec.Name, SizeMB: v.rec.SizeMB, CreatedAt: v.rec.CreatedAt, Users: users}
}

// List describes owner's volumes by name, without usage.
func (s *Store) List(owner string) []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Info
	for _, v := range s.vols {
		if v.rec.Owner == owner && !v.creating {
			out = append(out, v.info())
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// lookupLocked finds owner's volume name: S260 when it is not there (or
// not made yet), whoever else has one of that name.
func (s *Store) lookupLocked(owner, name string) (*volume, error) {
	v, ok := s.vols[key(owner, name)]
	if !ok || v.creating {
		return nil, notFound(name)
	}
	return v, nil
}

// Get describes owner's volume name with what it uses, mounting it for
// the moment when no sandbox does.
func (s *Store) Get(owner, name string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lookupLocked(owner, name)
	if err != nil {
		return Info{}, err
	}
	info := v.info()
	if s.usable() != nil {
		return info, nil
	}
	wasMounted := v.mounted
	if err := s.mountLocked(v); err != nil {
		return Info{}, err
	}
	info.UsedBytes, info.AvailableBytes, err = s.disks.Usage(s.mountOf(v))
	if !wasMounted {
		err = errors.Join(err, s.unmountLocked(v))
	}
	if err != nil {
		return Info{}, fmt.Errorf("measuring volume %s: %w", name, err)
	}
	return info, nil
}

// Delete removes owner's volume name and its data: S262 while a sandbox
// (or a create in progress) mounts it.
func (s *Store) Delete(owner, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.lookupLocked(owner, name)
	if err != nil {
		return err
	}
	if len(v.users) > 0 {
		users := v.info().Users
		return errdefs.New(errdefs.CodeVolumeInUse, "volume %q is mounted by %d live sandbox(es): %s", name, len(users), strings.Join(users, ", ")).
			WithFix(nil, "stop the sandboxes that mount it first")
	}
	if err := s.unmountLocked(v); err != nil {
		return fmt.Errorf("deleting volume %s: %w", name, err)
	}
	delete(s.vols, key(owner, name))
	if err := s.saveLocked(); err != nil {
		s.vols[key(owner, name)] = v
		return err
	}
	if err := os.Remove(s.diskOf(v)); err != nil && !errors.Is(err, os.ErrNotExist) {
		// The record is gone: the next start removes the file.
		s.log.Error("removing a deleted volume's disk", "volume", name, "err", err)
	}
	s.log.Info("volume deleted", "volume", name, "owner", owner)
	return nil
}

// Check says whether Acquire could mount owner's volumes names now: S266
// when the host cannot, S260 for a name owner has no volume of.
func (s *Store) Check(owner string, names []string) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if _, err := s.lookupLocked(owner, n); err != nil {
			return err
		}
	}
	return nil
}

// Use is a volume a sandbox mounts: the host directory of its mounted
// file system.
type Use struct {
	Name string
	Dir  string
}

// Acquire mounts owner's volumes names (each once, in order) for user, a
// sandbox id, and returns their host directories; until Release(user)
// none of them can be deleted. S260 for a name owner has no volume of.
func (s *Store) Acquire(owner, user string, names []string) ([]Use, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errdefs.ShuttingDown()
	}
	vols := make([]*volume, 0, len(names))
	for _, n := range names {
		v, err := s.lookupLocked(owner, n)
		if err != nil {
			return nil, err
		}
		vols = append(vols, v)
	}
	uses := make([]Use, 0, len(vols))
	for _, v := range vols {
		if err := s.mountLocked(v); err != nil {
			s.releaseLocked(user)
			return nil, fmt.Errorf("mounting volume %s: %w", v.rec.Name, err)
		}
		failpoint.Hit("volume.attach.after-mount")
		v.users[user] = struct{}{}
		uses = append(uses, Use{Name: v.rec.Name, Dir: s.mountOf(v)})
	}
	return uses, nil
}

// Release gives back the volumes user acquired; each that no other user
// has is unmounted.
func (s *Store) Release(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(user)
}

func (s *Store) releaseLocked(user string) {
	for _, v := range s.vols {
		if _, ok := v.users[user]; !ok {
			continue
		}
		delete(v.users, user)
		if len(v.users) == 0 {
			if err := s.unmountLocked(v); err != nil {
				s.log.Error("unmounting volume", "volume", v.rec.Name, "err", err)
			}
		}
	}
}

// mountLocked mounts v unless it is mounted.
func (s *Store) mountLocked(v *volume) error {
	if v.mounted {
		return nil
	}
	dir := s.mountOf(v)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := s.disks.Mount(s.diskOf(v), dir); err != nil {
		_ = os.Remove(dir)
		return err
	}
	v.mounted = true
	return nil
}

// unmountLocked unmounts v if it is mounted and removes its mount point.
func (s *Store) unmountLocked(v *volume) error {
	if !v.mounted {
		return nil
	}
	dir := s.mountOf(v)
	if err := s.disks.Unmount(dir); err != nil {
		return err
	}
	v.mounted = false
	return os.Remove(dir)
}

// Close unmounts every volume; the sandboxes using them must be gone.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, v := range s.vols {
		clear(v.users)
		if err := s.unmountLocked(v); err != nil {
			errs = append(errs, fmt.Errorf("unmounting volume %s: %w", v.rec.Name, err))
		}
	}
	return errors.Join(errs...)
}
