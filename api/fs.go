package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// FileMode is a permission mode in octal, as in "0644". In JSON it is a
// string ("0644", "644", "0o644") or a number whose decimal digits are read
// as octal (644 means 0644, as chmod reads it). The empty mode means "not
// given". The manager validates it (S210).
type FileMode string

// UnmarshalJSON accepts a string or a number.
func (m *FileMode) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] != '"' && !bytes.Equal(b, []byte("null")) {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("mode must be an octal string such as \"0644\"")
		}
		*m = FileMode(n.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("mode must be an octal string such as \"0644\"")
	}
	*m = FileMode(s)
	return nil
}

// FsEntry describes one path: an entry of sandbox::fs::ls and the result of
// sandbox::fs::stat. A symlink is described itself (IsSymlink), not its
// target.
type FsEntry struct {
	Name  string `json:"name"`
	IsDir bool   `json:"is_dir"`
	Size  int64  `json:"size"`
	// Mode is the permission bits in octal, "0644" (with setuid, setgid
	// and sticky when set: "1777").
	Mode string `json:"mode"`
	// Mtime is the modification time in Unix seconds.
	Mtime     int64 `json:"mtime"`
	IsSymlink bool  `json:"is_symlink"`
	// Metadata is the entry's user metadata (issue 40), set by a write's
	// Metadata; kept as user.e2b.* extended attributes.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FsLsRequest is the payload of sandbox::fs::ls.
type FsLsRequest struct {
	SandboxID string `json:"sandbox_id"`
	// User runs the operation as this user of the sandbox's image (a
	// name or uid[:gid]) rather than the image's own (hutch extension).
	User string `json:"user,omitempty"`
	Path string `json:"path"`
}

// FsLsResponse is the result of sandbox::fs::ls, sorted by name.
type FsLsResponse struct {
	Entries []FsEntry `json:"entries"`
}

// FsStatRequest is the payload of sandbox::fs::stat; its result is an
// FsEntry.
type FsStatRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	Path      string `json:"path"`
}

// FsMkdirRequest is the payload of sandbox::fs::mkdir. Mode defaults to
// "0755"; with Parents missing parents are created and an existing
// directory is not an error.
type FsMkdirRequest struct {
	SandboxID string   `json:"sandbox_id"`
	User      string   `json:"user,omitempty"` // as FsLsRequest.User
	Path      string   `json:"path"`
	Mode      FileMode `json:"mode,omitempty"`
	Parents   bool     `json:"parents,omitempty"`
}

// FsMkdirResponse is the result of sandbox::fs::mkdir. Created is false
// when Parents was set and the directory already existed.
type FsMkdirResponse struct {
	Created bool `json:"created"`
}

// FsWriteRequest is the payload of sandbox::fs::write. Exactly one of
// Content (UTF-8 text) and ContentB64 (base64 bytes) is set; "" is an empty
// file. Mode defaults to "0644" for a new file; an existing file keeps its
// mode and owner unless Mode is given.
type FsWriteRequest struct {
	SandboxID  string   `json:"sandbox_id"`
	User       string   `json:"user,omitempty"` // as FsLsRequest.User
	Path       string   `json:"path"`
	Mode       FileMode `json:"mode,omitempty"`
	Parents    bool     `json:"parents,omitempty"`
	Content    *string  `json:"content,omitempty"`
	ContentB64 *string  `json:"content_b64,omitempty"`
	// Body, instead of Content and ContentB64, is the content as a stream
	// that a transport carries beside the payload (REST's PUT body, the
	// engine's channel given as content): written as it arrives, the file
	// appears once it has been read to its end.
	Body io.Reader `json:"-"`
	// Metadata is user metadata set on the written file (issue 40):
	// at most 64 keys of printable ASCII, 16 KiB in all (E2B's file
	// metadata).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FsWriteResponse is the result of sandbox::fs::write and of a streamed
// upload. Path is where the bytes went: the target of a symlink when the
// requested path was one.
type FsWriteResponse struct {
	BytesWritten int64  `json:"bytes_written"`
	Path         string `json:"path"`
}

// FsReadRequest is the payload of sandbox::fs::read.
type FsReadRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	Path      string `json:"path"`
	// StreamBody says the transport takes the file's bytes as a stream
	// beside the result (the engine's channel given as content).
	StreamBody bool `json:"-"`
}

// FsReadMaxBody is the size under which sandbox::fs::read returns a file's
// content; larger files are read through the streamed download.
const FsReadMaxBody = 1 << 20

// FsReadResponse is the result of sandbox::fs::read. Body is set when the
// file is under FsReadMaxBody bytes and valid UTF-8; ContentB64 (an hutch
// extension) when it is under the limit but not UTF-8.
type FsReadResponse struct {
	Body       *string `json:"body,omitempty"`
	ContentB64 *string `json:"content_b64,omitempty"`
	Size       int64   `json:"size"`
	Mode       string  `json:"mode"`
	Mtime      int64   `json:"mtime"`
}

// FsRmRequest is the payload of sandbox::fs::rm.
type FsRmRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// FsRmResponse is the result of sandbox::fs::rm.
type FsRmResponse struct {
	Removed bool `json:"removed"`
}

// FsMvRequest is the payload of sandbox::fs::mv.
type FsMvRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// FsMvResponse is the result of sandbox::fs::mv.
type FsMvResponse struct {
	Moved bool `json:"moved"`
}

// FsChmodRequest is the payload of sandbox::fs::chmod. At least one of
// Mode, UID and GID is set.
type FsChmodRequest struct {
	SandboxID string   `json:"sandbox_id"`
	User      string   `json:"user,omitempty"` // as FsLsRequest.User
	Path      string   `json:"path"`
	Mode      FileMode `json:"mode,omitempty"`
	UID       *uint32  `json:"uid,omitempty"`
	GID       *uint32  `json:"gid,omitempty"`
	Recursive bool     `json:"recursive,omitempty"`
}

// FsChmodResponse is the result of sandbox::fs::chmod: how many paths
// changed.
type FsChmodResponse struct {
	Updated int64 `json:"updated"`
}

// Defaults of sandbox::fs::grep.
const (
	FsGrepDefaultMaxMatches   = 10000
	FsGrepDefaultMaxLineBytes = 4096
)

// FsGrepRequest is the payload of sandbox::fs::grep. Pattern is a Go
// regular expression (RE2 syntax). Recursive defaults to true. Globs are
// doublestar patterns; one without '/' matches a file's base name.
// MaxMatches (default 10000) and MaxLineBytes (default 4096) bound the
// result.
type FsGrepRequest struct {
	SandboxID    string   `json:"sandbox_id"`
	User         string   `json:"user,omitempty"` // as FsLsRequest.User
	Path         string   `json:"path"`
	Pattern      string   `json:"pattern"`
	Recursive    *bool    `json:"recursive,omitempty"`
	IgnoreCase   bool     `json:"ignore_case,omitempty"`
	IncludeGlob  []string `json:"include_glob,omitempty"`
	ExcludeGlob  []string `json:"exclude_glob,omitempty"`
	MaxMatches   int64    `json:"max_matches,omitempty"`
	MaxLineBytes int64    `json:"max_line_bytes,omitempty"`
}

// FsGrepMatch is one matching line; Line is 1-based.
type FsGrepMatch struct {
	Path    string `json:"path"`
	Line    int64  `json:"line"`
	Content string `json:"content"`
}

// FsGrepResponse is the result of sandbox::fs::grep; Truncated says more
// matches were left out.
type FsGrepResponse struct {
	Matches   []FsGrepMatch `json:"matches"`
	Truncated bool          `json:"truncated"`
}

// FsSedRequest is the payload of sandbox::fs::sed: exactly one of Files
// and Path. Regex defaults to true (Go syntax; the replacement expands $1
// and ${name}); with Regex false both are taken literally. FirstOnly
// replaces the first match of each line only. Recursive and the globs apply
// when Path is a directory.
type FsSedRequest struct {
	SandboxID   string   `json:"sandbox_id"`
	User        string   `json:"user,omitempty"` // as FsLsRequest.User
	Files       []string `json:"files,omitempty"`
	Path        string   `json:"path,omitempty"`
	Recursive   *bool    `json:"recursive,omitempty"`
	IncludeGlob []string `json:"include_glob,omitempty"`
	ExcludeGlob []string `json:"exclude_glob,omitempty"`
	Pattern     string   `json:"pattern"`
	Replacement string   `json:"replacement"`
	Regex       *bool    `json:"regex,omitempty"`
	FirstOnly   bool     `json:"first_only,omitempty"`
	IgnoreCase  bool     `json:"ignore_case,omitempty"`
}

// FsSedResult is the outcome for one file. A failed file has Success false,
// Error naming the path and Code its S-code (an hutch extension).
type FsSedResult struct {
	Path         string `json:"path"`
	Replacements int64  `json:"replacements"`
	Success      bool   `json:"success"`
	Error        string `json:"error,omitempty"`
	Code         string `json:"code,omitempty"`
}

// FsSedResponse is the result of sandbox::fs::sed.
type FsSedResponse struct {
	Results           []FsSedResult `json:"results"`
	TotalReplacements int64         `json:"total_replacements"`
}

// FsUploadRequest opens a streamed upload (PUT /v1/sandboxes/{id}/files):
// the body is the file's bytes. Mode and Parents are as in FsWriteRequest.
type FsUploadRequest struct {
	SandboxID string   `json:"sandbox_id"`
	User      string   `json:"user,omitempty"` // as FsLsRequest.User
	Path      string   `json:"path"`
	Mode      FileMode `json:"mode,omitempty"`
	Parents   bool     `json:"parents,omitempty"`
	// Metadata as FsWriteRequest.Metadata (issue 40).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FsDownloadRequest opens a streamed download (GET
// /v1/sandboxes/{id}/files) of a regular file.
type FsDownloadRequest struct {
	SandboxID string `json:"sandbox_id"`
	User      string `json:"user,omitempty"` // as FsLsRequest.User
	Path      string `json:"path"`
}
