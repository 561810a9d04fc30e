package snapsvc

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Snapshots and forks. A snapshot is a checkpoint of a running sandbox
// (Handle.Checkpoint, leaving it running) in its own directory under the
// checkpoint directory, with a record in the store; both outlive the
// daemon. A create with snapshot_id restores a new sandbox from it; a fork
// takes a checkpoint that no record keeps and restores its copies from it.

// maxForkCount bounds one fork's copies (capacity bounds them too).
const maxForkCount = 100

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
		CPUs: r.CPUs, MemoryMB: r.MemoryMB, SizeBytes: r.SizeBytes, CreatedAt: stamp(r.CreatedAt)}
}

// allSnapshots are every snapshot's record; bad are the keys of those that
// do not decode.
func (s *Service) allSnapshots() ([]*snapshotRecord, []string, error) {
	return sandbox.AllRecords(s.snapshots, func(r *snapshotRecord) string { return r.ID })
}

// checkpoint writes a checkpoint of h into a new temporary directory and
// returns it; h stays as it was.
func (s *Service) checkpoint(ctx context.Context, h sandbox.Handle) (_ string, err error) {
	_, span := spans.Start(ctx, "sandbox.checkpoint")
	defer func() { endSpan(span, err) }()
	tmp, err := s.tempDir()
	if err != nil {
		return "", fmt.Errorf("creating a checkpoint directory: %w", err)
	}
	if err := h.Checkpoint(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// CreateSnapshot checkpoints a running sandbox, which goes on running
// (sandbox::snapshot::create).
func (s *Service) CreateSnapshot(ctx context.Context, req api.SnapshotCreateRequest) (api.SnapshotInfo, error) {
	if len(req.Name) > 128 || !safetext.Safe(req.Name) {
		return api.SnapshotInfo{}, errdefs.Malformed("name must be at most 128 bytes of text without control characters")
	}
	h, release, err := s.core.Acquire(ctx, req.SandboxID, sandbox.UseRead) // running or paused
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	defer release()
	tmp, err := s.checkpoint(ctx, h)
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	failpoint.Hit("snapshot.write.after-checkpoint")
	size, err := dirSize(tmp)
	if err != nil {
		return api.SnapshotInfo{}, fmt.Errorf("measuring a snapshot: %w", err)
	}
	of, from := h.Copy()
	rec := &snapshotRecord{ID: uuid.NewString(), Name: req.Name, Owner: auth.OwnerFrom(ctx), SandboxID: h.ID(),
		Image: of.Image, ImageID: from.ImageID, CPUs: from.CPUs, MemoryMB: from.MemoryMB,
		Network: from.Network, Env: of.Env, SizeBytes: size, CreatedAt: time.Now().UTC(), Runtime: from.Runtime}
	if err := s.keepSnapshot(rec, tmp); err != nil {
		return api.SnapshotInfo{}, err
	}
	s.log.Info("snapshot created", "snapshot", rec.ID, "sandbox", h.ID(), "bytes", size)
	h.Emit(api.EventSnapshotMade, map[string]any{"snapshot_id": rec.ID, "size_bytes": size})
	return rec.info(), nil
}

// keepSnapshot makes the checkpoint in tmp snapshot rec: within
// snapshot_storage_mb (S400 otherwise), moved to its directory, recorded.
// On failure nothing of it is kept.
func (s *Service) keepSnapshot(rec *snapshotRecord, tmp string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.roomFor(rec.SizeBytes); err != nil {
		return err
	}
	dir := s.path(rec.ID)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("keeping a snapshot: %w", err)
	}
	failpoint.Hit("snapshot.write.after-rename")
	if err := s.snapshots.Put(rec.ID, rec); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("recording a snapshot: %w", err)
	}
	return nil
}

// snapshot returns the caller's snapshot of id: S001 malformed, S006
// unknown or another owner's.
func (s *Service) snapshot(ctx context.Context, id string) (*snapshotRecord, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, errdefs.Malformed("snapshot_id %q is not a UUID", spec.Clip(id, 64))
	}
	var rec snapshotRecord
	found, err := s.snapshots.Get(id, &rec)
	if err != nil {
		return nil, err
	}
	if !found || rec.Owner != auth.OwnerFrom(ctx) {
		return nil, errdefs.New(errdefs.CodeNoSnapshot, "snapshot not found: %s", id)
	}
	return &rec, nil
}

// snapshotSource resolves a create's snapshot_id: the checkpoint to
// restore, with req's image, cpus and memory set to the snapshot's (S001
// when req names others).
func (s *Service) snapshotSource(ctx context.Context, req *api.CreateRequest) (*sandbox.Origin, error) {
	rec, err := s.snapshot(ctx, req.SnapshotID)
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
	prefetch(s.path(rec.ID)) // issue 46: read while the sandbox starts
	from := &sandbox.Origin{Runtime: rec.Runtime, Checkpoint: s.path(rec.ID), ImageID: rec.ImageID, CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, Network: rec.Network}
	s.claimAhead(rec, req, from) // issue 46
	return from, nil
}

// ListSnapshots lists the caller's snapshots, oldest first.
func (s *Service) ListSnapshots(ctx context.Context, _ api.SnapshotListRequest) (api.SnapshotListResponse, error) {
	recs, _, err := s.allSnapshots()
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
func (s *Service) GetSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotInfo, error) {
	rec, err := s.snapshot(ctx, req.SnapshotID)
	if err != nil {
		return api.SnapshotInfo{}, err
	}
	return rec.info(), nil
}

// DeleteSnapshot removes a snapshot's record and files. Sandboxes restored
// from it are not affected.
func (s *Service) DeleteSnapshot(ctx context.Context, req api.SnapshotRequest) (api.SnapshotDeleteResponse, error) {
	rec, err := s.snapshot(ctx, req.SnapshotID)
	if err != nil {
		return api.SnapshotDeleteResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.snapshots.Remove(rec.ID); err != nil {
		return api.SnapshotDeleteResponse{}, err
	}
	s.dropAhead(rec) // issue 46
	if err := os.RemoveAll(s.path(rec.ID)); err != nil {
		s.log.Error("removing a snapshot's files", "snapshot", rec.ID, "err", err)
	}
	return api.SnapshotDeleteResponse{SnapshotID: rec.ID, Deleted: true}, nil
}

// Fork makes count running copies of a running sandbox from one
// checkpoint of it (sandbox::fork). Each copy is created as by
// sandbox::create, with the source's image, shape, env, life terms and
// metadata; a copy that cannot be made fails the fork, and the copies
// already made are stopped.
func (s *Service) Fork(ctx context.Context, req api.ForkRequest) (_ api.ForkResponse, err error) {
	ctx, span := spans.Start(ctx, "sandbox.fork")
	defer func() { endSpan(span, err) }()
	if req.Count == 0 {
		req.Count = 1
	}
	if req.Count < 1 || req.Count > maxForkCount {
		return api.ForkResponse{}, errdefs.Malformed("count must be between 1 and %d, got %d", maxForkCount, req.Count)
	}
	h, release, err := s.core.Acquire(ctx, req.SandboxID, sandbox.UseRead) // running or paused
	if err != nil {
		return api.ForkResponse{}, err
	}
	defer release()
	tmp, err := s.checkpoint(ctx, h)
	if err != nil {
		return api.ForkResponse{}, err
	}
	defer os.RemoveAll(tmp)
	copyReq, from := h.Copy()
	from.Checkpoint = tmp
	failpoint.Hit("fork.after-checkpoint")
	ids := make([]string, req.Count)
	g, gctx := errgroup.WithContext(ctx)
	for i := range ids {
		g.Go(func() error {
			resp, err := s.core.CreateFrom(gctx, copyReq, &from)
			ids[i] = resp.SandboxID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, id := range ids {
			if id != "" {
				_, _ = s.core.Stop(context.WithoutCancel(ctx), api.StopRequest{SandboxID: id})
			}
		}
		return api.ForkResponse{}, err
	}
	s.log.Info("sandbox forked", "sandbox", h.ID(), "copies", req.Count)
	h.Emit(api.EventSandboxForked, map[string]any{"sandbox_ids": ids})
	return api.ForkResponse{SandboxIDs: ids}, nil
}
