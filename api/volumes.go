package api

// Volumes (hutch extensions): named, size-bounded file systems of an
// owner that outlive sandboxes and daemon restarts, mounted into
// sandboxes at create (CreateRequest.Volumes).

// Function ids of the volume functions.
const (
	FnVolumeCreate = "sandbox::volume::create"
	FnVolumeList   = "sandbox::volume::list"
	FnVolumeGet    = "sandbox::volume::get"
	FnVolumeDelete = "sandbox::volume::delete"
)

// VolumeMount mounts an owner's volume into a sandbox at create.
type VolumeMount struct {
	// Name is the volume's name.
	Name string `json:"name"`
	// Path is where the sandbox sees it: absolute and clean, not / nor
	// a system directory (/proc, /dev, /sys, /.hutch).
	Path string `json:"path"`
	// ReadOnly mounts it read-only: writes fail with EROFS inside.
	ReadOnly bool `json:"read_only,omitempty"`
}

// VolumeCreateRequest is the payload of sandbox::volume::create.
type VolumeCreateRequest struct {
	// Name is a DNS label: 1 to 63 lower-case letters, digits and
	// hyphens, starting and ending with a letter or digit.
	Name string `json:"name"`
	// SizeMB is the file system's size; 0 is the daemon's
	// volume_default_size_mb. A write past it fails with ENOSPC inside.
	SizeMB uint64 `json:"size_mb,omitempty"`
}

// VolumeRequest names a volume (sandbox::volume::get and delete).
type VolumeRequest struct {
	Name string `json:"name"`
}

// VolumeListRequest is the payload of sandbox::volume::list.
type VolumeListRequest struct{}

// VolumeInfo describes a volume.
type VolumeInfo struct {
	Name      string `json:"name"`
	SizeMB    uint64 `json:"size_mb"`
	CreatedAt string `json:"created_at"`
	// UsedBytes is what its files and the file system's own metadata
	// take (sandbox::volume::get only; 0 in lists).
	UsedBytes uint64 `json:"used_bytes"`
	// AvailableBytes is what writes may still take (get only).
	AvailableBytes uint64 `json:"available_bytes"`
	// SandboxIDs are the live sandboxes that mount it.
	SandboxIDs []string `json:"sandbox_ids"`
}

// VolumeListResponse is the result of sandbox::volume::list.
type VolumeListResponse struct {
	Volumes []VolumeInfo `json:"volumes"`
}

// VolumeDeleteResponse is the result of sandbox::volume::delete.
type VolumeDeleteResponse struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (r *VolumeRequest) NameField() *string { return &r.Name }
