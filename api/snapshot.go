package api

// Snapshots and forks (hutch extensions beyond the seeds' contract): a
// snapshot is a sandbox's memory, processes and writable layer, from which
// sandbox::create {snapshot_id} starts new sandboxes.

// Function ids of the snapshot functions and of fork.
const (
	FnSnapshotCreate = "sandbox::snapshot::create"
	FnSnapshotList   = "sandbox::snapshot::list"
	FnSnapshotGet    = "sandbox::snapshot::get"
	FnSnapshotDelete = "sandbox::snapshot::delete"
	FnFork           = "sandbox::fork"
)

// SnapshotCreateRequest is the payload of sandbox::snapshot::create.
type SnapshotCreateRequest struct {
	SandboxID string `json:"sandbox_id"`
	// Name is a label shown by list.
	Name string `json:"name,omitempty"`
}

// SnapshotRequest names one snapshot (get, delete).
type SnapshotRequest struct {
	SnapshotID string `json:"snapshot_id"`
}

// SnapshotListRequest is the payload of sandbox::snapshot::list (no fields).
type SnapshotListRequest struct{}

// SnapshotInfo describes one snapshot.
type SnapshotInfo struct {
	SnapshotID string `json:"snapshot_id"`
	Name       string `json:"name,omitempty"`
	// SandboxID is the sandbox it was taken of.
	SandboxID string `json:"sandbox_id"`
	Image     string `json:"image"`
	CPUs      uint32 `json:"cpus"`
	MemoryMB  uint32 `json:"memory_mb"`
	// SizeBytes is what it takes on disk.
	SizeBytes int64  `json:"size_bytes"`
	CreatedAt string `json:"created_at"`
}

// SnapshotListResponse is the result of sandbox::snapshot::list.
type SnapshotListResponse struct {
	Snapshots []SnapshotInfo `json:"snapshots"`
	// UsedBytes is what the caller's snapshots take together.
	UsedBytes int64 `json:"used_bytes"`
}

// SnapshotDeleteResponse is the result of sandbox::snapshot::delete.
type SnapshotDeleteResponse struct {
	SnapshotID string `json:"snapshot_id"`
	Deleted    bool   `json:"deleted"`
}

// ForkRequest is the payload of sandbox::fork: Count running copies of a
// sandbox, from one checkpoint of it.
type ForkRequest struct {
	SandboxID string `json:"sandbox_id"`
	Count     int    `json:"count,omitempty"`
}

// ForkResponse is the result of sandbox::fork.
type ForkResponse struct {
	SandboxIDs []string `json:"sandbox_ids"`
}

func (r *SnapshotCreateRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *ForkRequest) SandboxIDField() *string           { return &r.SandboxID }
func (r *SnapshotRequest) SnapshotIDField() *string      { return &r.SnapshotID }
