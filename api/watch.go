package api

// FnFsWatch follows the changes under a directory of a sandbox (a hutch
// extension): an "open" event once the watch is in place, then one
// "change" event (FsWatchEvent) per change.
const FnFsWatch = "sandbox::fs::watch"

// FsWatchRequest is the payload of sandbox::fs::watch.
type FsWatchRequest struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	// Recursive follows the directories below Path too, including those
	// created later.
	Recursive bool   `json:"recursive,omitempty"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
}

// Kinds of FsWatchEvent.
const (
	WatchCreate   = "create"
	WatchWrite    = "write"
	WatchRemove   = "remove"
	WatchRename   = "rename"
	WatchChmod    = "chmod"
	WatchOverflow = "overflow" // events were lost: look again
)

// FsWatchEvent is one change.
type FsWatchEvent struct {
	Type string `json:"type"`
	// Path is what changed; for a rename its new path.
	Path    string `json:"path,omitempty"`
	OldPath string `json:"old_path,omitempty"`
	IsDir   bool   `json:"is_dir,omitempty"`
}

func (r *FsWatchRequest) SandboxIDField() *string { return &r.SandboxID }
