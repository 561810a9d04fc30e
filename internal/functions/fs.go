package functions

// sandbox::fs::*: the ten filesystem functions, and the streamed transfers
// the REST transport offers next to them.

import (
	"context"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// FS is what the filesystem functions dispatch to: the sandbox manager.
// The table registers them when its Sandboxes implements FS.
type FS interface {
	Ls(ctx context.Context, req api.FsLsRequest) (api.FsLsResponse, error)
	Stat(ctx context.Context, req api.FsStatRequest) (api.FsEntry, error)
	Mkdir(ctx context.Context, req api.FsMkdirRequest) (api.FsMkdirResponse, error)
	WriteFile(ctx context.Context, req api.FsWriteRequest) (api.FsWriteResponse, error)
	ReadFile(ctx context.Context, req api.FsReadRequest) (api.FsReadResponse, error)
	Rm(ctx context.Context, req api.FsRmRequest) (api.FsRmResponse, error)
	Mv(ctx context.Context, req api.FsMvRequest) (api.FsMvResponse, error)
	Chmod(ctx context.Context, req api.FsChmodRequest) (api.FsChmodResponse, error)
	Grep(ctx context.Context, req api.FsGrepRequest) (api.FsGrepResponse, error)
	Sed(ctx context.Context, req api.FsSedRequest) (api.FsSedResponse, error)
	// Upload writes body to a file as a stream; the file appears only once
	// body has been read to its end.
	Upload(ctx context.Context, req api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error)
	// Download opens a streamed read of a file: its metadata and a reader
	// of its bytes, which the caller closes.
	Download(ctx context.Context, req api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error)
}

// FSOps are the operations of sandbox::fs::{op}, in the contract's order.
var FSOps = []string{"ls", "stat", "mkdir", "write", "read", "rm", "mv", "chmod", "grep", "sed"}

// registerFS adds the sandbox::fs::* functions when the table's manager
// implements FS.
func registerFS(t *Table) {
	fs, err := t.fs()
	if err != nil {
		return
	}
	add(t, "sandbox::fs::ls", "List directory contents inside a sandbox", fs.Ls)
	add(t, "sandbox::fs::stat", "Stat a path inside a sandbox", fs.Stat)
	add(t, "sandbox::fs::mkdir", "Create a directory inside a sandbox", fs.Mkdir)
	add(t, "sandbox::fs::write", "Write a file inside a sandbox (content or content_b64)", fs.WriteFile)
	add(t, "sandbox::fs::read", "Read a file from a sandbox", fs.ReadFile)
	add(t, "sandbox::fs::rm", "Remove a file or directory inside a sandbox", fs.Rm)
	add(t, "sandbox::fs::mv", "Move or rename a path inside a sandbox", fs.Mv)
	add(t, "sandbox::fs::chmod", "Change file permissions inside a sandbox", fs.Chmod)
	add(t, "sandbox::fs::grep", "Search for a pattern in files inside a sandbox", fs.Grep)
	add(t, "sandbox::fs::sed", "Search-and-replace in files inside a sandbox", fs.Sed)
}

// fs is the table's FS, or an S219 error when its manager has none.
func (t *Table) fs() (FS, error) {
	if fs, ok := t.sb.(FS); ok {
		return fs, nil
	}
	return nil, errdefs.New(errdefs.CodeFSUnsupported, "this daemon has no filesystem operations")
}

// Upload streams body into a file of a sandbox (see FS.Upload).
func (t *Table) Upload(ctx context.Context, req api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	fs, err := t.fs()
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	return fs.Upload(ctx, req, body)
}

// Download opens a streamed read of a file of a sandbox (see FS.Download).
func (t *Table) Download(ctx context.Context, req api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	fs, err := t.fs()
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	return fs.Download(ctx, req)
}
