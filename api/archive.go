package api

// Archives (hutch extensions): a tar archive unpacked into a directory of
// a sandbox, and a directory of a sandbox packed as a tar.gz.

// FnFsUnpack unpacks a tar archive (plain, gzip or zstd, told by its
// first bytes) into a directory of a sandbox, created when missing. The
// REST route PUT /v1/sandboxes/{id}/archive?path= streams the archive as
// its body; the function call takes it as content_b64.
const FnFsUnpack = "sandbox::fs::unpack"

// FnFsPack streams a directory of a sandbox as a tar.gz, a streaming
// function: an "entry" event (the directory's FsEntry), "data" events with
// the archive's bytes in order, then an FsDownloadResponse (the bytes
// sent). GET /v1/sandboxes/{id}/archive?path= renders it as the raw
// archive.
const FnFsPack = "sandbox::fs::pack"

// FsUnpackRequest is the payload of sandbox::fs::unpack.
type FsUnpackRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	// Path is the directory to unpack into (absolute).
	Path string `json:"path"`
	// ContentB64 is the archive, base64 (the function call's way; the
	// REST route streams it as its body instead, and ignores this).
	ContentB64 string `json:"content_b64,omitempty"`
}

// FsUnpackResponse is the result of sandbox::fs::unpack.
type FsUnpackResponse struct {
	// Entries is how many files, directories, links and fifos were written.
	Entries int64 `json:"entries"`
	// Bytes is how much file content was written.
	Bytes int64 `json:"bytes"`
	// Skipped is how many entries were left out: device nodes and types
	// that are not files.
	Skipped int64 `json:"skipped"`
	// Compression is how the archive came: "none", "gzip" or "zstd".
	Compression string `json:"compression"`
}

// FsPackRequest is the payload of sandbox::fs::pack.
type FsPackRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	// Path is the directory to pack (absolute).
	Path string `json:"path"`
}

func (r *FsUnpackRequest) SandboxIDField() *string { return &r.SandboxID }
func (r *FsPackRequest) SandboxIDField() *string   { return &r.SandboxID }
