package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Snapshots and forks. A snapshot is a checkpoint of a running sandbox
// (runtime.Checkpointer, leaving it running) in its own directory under
// snapshotRoot, with a record in the store; both outlive the daemon. A
// create with snapshot_id restores a new sandbox from it; a fork takes a
// checkpoint that no record keeps and restores its copies from it.

// checkpointTimeout bounds writing one checkpoint.
const checkpointTimeout = 2 * time.Minute

// maxForkCount bounds one fork's copies (capacity bounds them too).
const maxForkCount = 64

// origin is what a sandbox starts from other than its bare image: a
// checkpoint directory to restore (a snapshot's, a fork's or a
// hibernation's; then the sandbox keeps the shape and network it was taken
// of, with a network of its own), or a
// captured writable layer to boot with (a template's). imageID is the
// image either was taken on.
type origin struct {
	// runtime is the runtime a checkpoint was written by; "" is any.
	runtime        string
	checkpoint     string
	layer          string
	imageID        string
	cpus, memoryMB uint32
	network        bool
}

// snapshotRecord is the persisted record of one snapshot.
type snapshotRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Owner     string `json:"owner,omitempty"`
	SandboxID string `json:"sandbox_id"`
	Image     string `json:"image"`
	ImageID   string `json:"image_id"`
	CPUs      uint32 `json:"cpus"`
	MemoryMB  uint32 `json:"memory_mb"`
	Network   bool   `json:"network,omitempty"`
	// Runtime is the runtime that wrote it ("" in records of daemons that
	// had one runtime: the default).
	Runtime   string    `json:"runtime,omitempty"`
	Env       []string  `json:"env,omitempty"`
	SizeBytes int64     `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
}

func (r *snapshotRecord) info() api.SnapshotInfo {
	return api.SnapshotInfo{SnapshotID: r.ID, Name: r.Name, SandboxID: r.SandboxID, Image: r.Image,
		CPUs: r.CPUs, MemoryMB: r.MemoryMB, SizeBytes: r.SizeBytes, CreatedAt: rfc3339(r.CreatedAt)}
}

// snapshots guards the snapshot records and directories: mu serializes
// the quota's check with the record that uses the room.
type snapshots struct {
	mu   sync.Mutex
	root string
}

func (s *snapshots) dir(id string) string { return filepath.Join(s.root, id) }

// tempDir is a new directory for a checkpoint no record keeps yet; names
// beginning with "tmp-" are removed at start (recoverSnapshots).
func (s *snapshots) tempDir() (string, error) {
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(s.root, "tmp-")
}

// CreateSnapshot checkpoints a running sandbox, which goes on running
// (sandbox::snapshot::create).
func (m *Manager) CreateSnapshot(ctx context.Context, req api.SnapshotCreateRequest) (api.SnapshotInfo, error) {
	if len(req.Name) > 128 || !safetext.Safe(req.Name) {
		return api.SnapshotInfo{}, errdefs.Malformed("name must be at most 128 bytes of text without control characters")
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseRead) // running or paused
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	defer release()
	tmp, err := m.checkpointOf(sb)
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	size, err := dirSize(tmp)
	if err != nil {
		return api.SnapshotInfo{}, fmt.Errorf("measuring a snapshot: %w", err)
	}
	rec := &snapshotRecord{ID: uuid.NewString(), Name: req.Name, Owner: sb.rec.Owner, SandboxID: sb.rec.ID,
		Image: sb.rec.Image, ImageID: sb.rec.ImageID, CPUs: sb.rec.CPUs, MemoryMB: sb.rec.MemoryMB,
		Network: sb.rec.Network, Env: sb.rec.Env, SizeBytes: size, CreatedAt: time.Now().UTC(), Runtime: sb.rec.Runtime}
	if err := m.keepSnapshot(rec, tmp); err != nil {
		return api.SnapshotInfo{}, err
	}
	m.log.Info("snapshot created", "snapshot", rec.ID, "sandbox", sb.rec.ID, "bytes", size)
	m.emitFor(sb, api.EventSnapshotMade, map[string]any{"snapshot_id": rec.ID, "size_bytes": size})
	return rec.info(), nil
}

// keepSnapshot makes the checkpoint in tmp snapshot rec: within
// snapshot_storage_mb (S400 otherwise), moved to its directory, recorded.
// On failure nothing of it is kept.
func (m *Manager) keepSnapshot(rec *snapshotRecord, tmp string) error {
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if err := m.roomFor(rec.SizeBytes); err != nil {
		return err
	}
	dir := m.snaps.dir(rec.ID)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("keeping a snapshot: %w", err)
	}
	if err := m.store.putIn(bucketSnapshots, rec.ID, rec); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("recording a snapshot: %w", err)
	}
	return nil
}

// checkpointOf writes a checkpoint of sb into a new temporary directory
// and returns it; sb stays as it was. A running sandbox is checkpointed
// and goes on running; a frozen one is thawed for the checkpoint and
// frozen again; a hibernated one already is a checkpoint, which is linked.
// S302 when the runtime cannot.
func (m *Manager) checkpointOf(sb *sandbox) (string, error) {
	if err := refuseCheckpoint(sb, "snapshotted or forked"); err != nil {
		return "", err
	}
	sb.op.Lock() // not under a pause or resume
	defer sb.op.Unlock()
	st, end := sb.current()
	if st != Running && st != Paused {
		return "", notRunning(sb.rec.ID, st, end)
	}
	tmp, err := m.snaps.tempDir()
	if err != nil {
		return "", fmt.Errorf("creating a checkpoint directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	start := time.Now()
	switch {
	case st == Paused && sb.isHibernated():
		err = linkFiles(m.hibernateDir(sb.rec.ID), tmp)
	case st == Paused:
		err = m.checkpointFrozen(ctx, sb, tmp)
	default:
		err = m.checkpointRunning(ctx, sb, tmp)
	}
	if err != nil {
		os.RemoveAll(tmp)
		if errdefs.CodeOf(err) != errdefs.CodeInternal {
			return "", err
		}
		m.log.Error("checkpointing", "sandbox", sb.rec.ID, "err", err)
		return "", errdefs.New(errdefs.CodeInternal, "checkpointing sandbox %s failed", sb.rec.ID)
	}
	m.log.Debug("checkpoint written", "sandbox", sb.rec.ID, "ms", time.Since(start).Milliseconds())
	return tmp, nil
}

// checkpointRunning checkpoints a running sb into dir, leaving it running.
func (m *Manager) checkpointRunning(ctx context.Context, sb *sandbox, dir string) error {
	inst, _ := sb.conn()
	c, ok := inst.(runtime.Checkpointer)
	if !ok || !m.abilitiesOf(sb).Checkpoint {
		return unsupported(sb.rec.Runtime, "checkpoint sandboxes")
	}
	return c.Checkpoint(ctx, dir, true)
}

// checkpointFrozen checkpoints a frozen sb: runsc checkpoints a running
// sandbox, so it is thawed for that moment and frozen again after.
func (m *Manager) checkpointFrozen(ctx context.Context, sb *sandbox, dir string) error {
	p, err := m.pauser(sb)
	if err != nil {
		return err
	}
	if err := p.Resume(ctx); err != nil {
		return err
	}
	err = m.checkpointRunning(ctx, sb, dir)
	if perr := p.Pause(ctx); perr != nil {
		<-m.stopAsync(sb, endResumeFailed(fmt.Errorf("freezing it again after a checkpoint: %w", perr)))
		return errors.Join(err, perr)
	}
	return err
}

// linkFiles hard-links the files of directory from into directory to:
// the same bytes, no copy.
func linkFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// snapshot returns the caller's snapshot of id: S001 malformed, S006
// unknown or another owner's.
func (m *Manager) snapshot(ctx context.Context, id string) (*snapshotRecord, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, errdefs.Malformed("snapshot_id %q is not a UUID", clip(id, 64))
	}
	rec, err := getIn[snapshotRecord](m.store, bucketSnapshots, id)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.Owner != auth.OwnerFrom(ctx) {
		return nil, errdefs.New(errdefs.CodeNoSnapshot, "snapshot not found: %s", id)
	}
	return rec, nil
}

// snapshotSource resolves a create's snapshot_id: the checkpoint to
// restore, with req's image, cpus and memory set to the snapshot's (S001
// when req names others).
func (m *Manager) snapshotSource(ctx context.Context, req *api.CreateRequest) (*origin, error) {
	rec, err := m.snapshot(ctx, req.SnapshotID)
	if err != nil {
		return nil, err
	}
	if (req.Image != "" && req.Image != rec.Image) || (req.CPUs != 0 && req.CPUs != rec.CPUs) || (req.MemoryMB != 0 && req.MemoryMB != rec.MemoryMB) {
		return nil, errdefs.Malformed("snapshot %s is of a %s sandbox with %d cpus and %d MiB: a create from it may not ask for another image, cpus or memory_mb", rec.ID, rec.Image, rec.CPUs, rec.MemoryMB)
	}
	req.Image, req.CPUs, req.MemoryMB, req.Network = rec.Image, rec.CPUs, rec.MemoryMB, rec.Network
	if len(req.Env) == 0 {
		req.Env = rec.Env
	}
	return &origin{runtime: rec.Runtime, checkpoint: m.snaps.dir(rec.ID), imageID: rec.ImageID, cpus: rec.CPUs, memoryMB: rec.MemoryMB, network: rec.Network}, nil
}

// ListSnapshots lists the caller's snapshots, oldest first.
func (m *Manager) ListSnapshots(ctx context.Context, _ api.SnapshotListRequest) (api.SnapshotListResponse, error) {
	recs, _, err := allIn(m.store, bucketSnapshots, func(r *snapshotRecord) string { return r.ID })
	if err != nil {
		return api.SnapshotListResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	sort.Slice(recs, func(i, j int) bool { return recs[i].CreatedAt.Before(recs[j].CreatedAt) })
	out := api.SnapshotListResponse{Snapshots: []api.SnapshotInfo{}}
	for _, r := range recs {
		if r.Owner == owner {
			out.Snapshots = append(out.Snapshots, r.info())
			out.UsedBytes += r.SizeBytes
		}
	}
	return out, nil
}

// GetSnapshot describes one snapshot.
func (m *Manager) GetSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotInfo, error) {
	rec, err := m.snapshot(ctx, req.SnapshotID)
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	return rec.info(), nil
}

// DeleteSnapshot removes a snapshot's record and files. Sandboxes restored
// from it are not affected.
func (m *Manager) DeleteSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotDeleteResponse, error) {
	rec, err := m.snapshot(ctx, req.SnapshotID)
	if err != nil {
		return api.SnapshotDeleteResponse{}, err
	}
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if err := m.store.removeIn(bucketSnapshots, rec.ID); err != nil {
		return api.SnapshotDeleteResponse{}, err
	}
	if err := os.RemoveAll(m.snaps.dir(rec.ID)); err != nil {
		m.log.Error("removing a snapshot's files", "snapshot", rec.ID, "err", err)
	}
	return api.SnapshotDeleteResponse{SnapshotID: rec.ID, Deleted: true}, nil
}

// Fork makes count running copies of a running sandbox from one
// checkpoint of it (sandbox::fork). Each copy is created as by
// sandbox::create, with the source's image, shape, env, life terms and
// metadata; a copy that cannot be made fails the fork, and the copies
// already made are stopped.
func (m *Manager) Fork(ctx context.Context, req api.ForkRequest) (api.ForkResponse, error) {
	if req.Count == 0 {
		req.Count = 1
	}
	if req.Count < 1 || req.Count > maxForkCount {
		return api.ForkResponse{}, errdefs.Malformed("count must be between 1 and %d, got %d", maxForkCount, req.Count)
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseRead) // running or paused
	if err != nil {
		return api.ForkResponse{}, err
	}
	defer release()
	tmp, err := m.checkpointOf(sb)
	if err != nil {
		return api.ForkResponse{}, err
	}
	defer os.RemoveAll(tmp)
	rec := sb.snapshotRecord()
	from := &origin{runtime: rec.Runtime, checkpoint: tmp, imageID: rec.ImageID, cpus: rec.CPUs, memoryMB: rec.MemoryMB, network: rec.Network}
	copyReq := api.CreateRequest{Network: rec.Network, Egress: rec.Egress, Image: rec.Image, CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, Env: rec.Env,
		IdleTimeoutSecs: rec.IdleTimeoutSecs, OnIdle: rec.OnIdle, AutoResume: rec.AutoResume,
		TimeoutSecs: rec.TimeoutSecs, Metadata: rec.Metadata}
	ids := make([]string, req.Count)
	g, gctx := errgroup.WithContext(ctx)
	for i := range ids {
		g.Go(func() error {
			resp, err := m.create(gctx, copyReq, from)
			ids[i] = resp.SandboxID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, id := range ids {
			if id != "" {
				_, _ = m.Stop(context.WithoutCancel(ctx), api.StopRequest{SandboxID: id})
			}
		}
		return api.ForkResponse{}, err
	}
	m.log.Info("sandbox forked", "sandbox", sb.rec.ID, "copies", req.Count)
	m.emitFor(sb, api.EventSandboxForked, map[string]any{"sandbox_ids": ids})
	return api.ForkResponse{SandboxIDs: ids}, nil
}

// recoverSnapshots settles the snapshot directory at start: checkpoints
// and layers no record keeps (a crash mid-snapshot or mid-fork, a sandbox that was
// hibernated when the daemon stopped) are removed, and so are records
// whose directory is gone.
func (m *Manager) recoverSnapshots() error {
	recs, bad, err := allIn(m.store, bucketSnapshots, func(r *snapshotRecord) string { return r.ID })
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, r := range recs {
		if _, err := os.Stat(m.snaps.dir(r.ID)); errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("forgetting a snapshot whose files are gone", "snapshot", r.ID)
			bad = append(bad, r.ID)
			continue
		}
		kept[r.ID] = true
	}
	for _, id := range bad {
		if err := m.store.removeIn(bucketSnapshots, id); err != nil {
			return err
		}
	}
	tmpls, _, err := allIn(m.store, bucketTemplates, func(r *templateRecord) string { return r.key() })
	if err != nil {
		return err
	}
	for _, r := range tmpls {
		if r.Layer != "" {
			kept[r.Layer] = true
		}
	}
	entries, err := os.ReadDir(m.snaps.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !kept[e.Name()] {
			if err := os.RemoveAll(filepath.Join(m.snaps.root, e.Name())); err != nil {
				return err
			}
			if !strings.HasPrefix(e.Name(), "tmp-") && !strings.HasPrefix(e.Name(), "hibernated-") {
				m.log.Warn("removed snapshot files no record kept", "dir", e.Name())
			}
		}
	}
	return nil
}

// dirSize is the bytes the regular files under dir take.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}
