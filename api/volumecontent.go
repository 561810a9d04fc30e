package api

import "io"

// issue 40: a volume's files from the host (hutch extension; E2B's
// /volumecontent routes), without a sandbox that mounts it. Paths are
// inside the volume: "/" is its root, and no path (nor a symlink in the
// volume) leads out of it.

// Function ids of the volume content functions.
const (
	FnVolumeFsList   = "sandbox::volume::fs::list"
	FnVolumeFsStat   = "sandbox::volume::fs::stat"
	FnVolumeFsRead   = "sandbox::volume::fs::read"
	FnVolumeFsWrite  = "sandbox::volume::fs::write"
	FnVolumeFsMkdir  = "sandbox::volume::fs::mkdir"
	FnVolumeFsSet    = "sandbox::volume::fs::set"
	FnVolumeFsRemove = "sandbox::volume::fs::remove"
)

// MaxVolumeReadBytes bounds a file sandbox::volume::fs::read returns.
const MaxVolumeReadBytes = 16 << 20

// VolumeFsRequest names a path of a volume (stat, read, remove).
type VolumeFsRequest struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// VolumeFsListRequest is the payload of sandbox::volume::fs::list.
type VolumeFsListRequest struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Depth is how many levels below path are listed: 0 and 1 are its
	// entries, at most 10.
	Depth int `json:"depth,omitempty"`
}

// VolumeEntry describes a file, directory or symlink of a volume, itself
// (a symlink is not followed).
type VolumeEntry struct {
	Name string `json:"name"`
	// Path is the entry's path in the volume, from its root "/".
	Path string `json:"path"`
	// Type is file, directory, symlink or unknown.
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits with setuid, setgid and sticky.
	Mode uint32 `json:"mode"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	// Atime, Mtime and Ctime are RFC 3339 times.
	Atime string `json:"atime"`
	Mtime string `json:"mtime"`
	Ctime string `json:"ctime"`
	// Target is a symlink's target, as written.
	Target string `json:"target,omitempty"`
}

// VolumeFsListResponse is the result of sandbox::volume::fs::list, by path.
type VolumeFsListResponse struct {
	Entries []VolumeEntry `json:"entries"`
}

// VolumeFsReadResponse is the result of sandbox::volume::fs::read: a
// regular file of at most MaxVolumeReadBytes.
type VolumeFsReadResponse struct {
	Entry      VolumeEntry `json:"entry"`
	ContentB64 string      `json:"content_b64"`
}

// VolumeOwnership is the owner and mode a write, mkdir or set gives.
type VolumeOwnership struct {
	UID  *uint32 `json:"uid,omitempty"`
	GID  *uint32 `json:"gid,omitempty"`
	Mode *uint32 `json:"mode,omitempty"`
}

// VolumeFsWriteRequest is the payload of sandbox::volume::fs::write:
// content_b64, or Body from a transport. An existing file is replaced
// only with Force; missing parents are not created.
type VolumeFsWriteRequest struct {
	Name       string  `json:"name"`
	Path       string  `json:"path"`
	ContentB64 *string `json:"content_b64,omitempty"`
	Force      bool    `json:"force,omitempty"`
	VolumeOwnership
	// Body is the content as a stream a transport carries (E2B's PUT).
	Body io.Reader `json:"-"`
}

// VolumeFsMkdirRequest is the payload of sandbox::volume::fs::mkdir;
// Force creates missing parents and accepts an existing directory.
type VolumeFsMkdirRequest struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Force bool   `json:"force,omitempty"`
	VolumeOwnership
}

// VolumeFsSetRequest is the payload of sandbox::volume::fs::set: the
// owner and mode of an entry.
type VolumeFsSetRequest struct {
	Name string `json:"name"`
	Path string `json:"path"`
	VolumeOwnership
}

// VolumeFsRemoveResponse is the result of sandbox::volume::fs::remove.
type VolumeFsRemoveResponse struct {
	Removed bool `json:"removed"`
}
