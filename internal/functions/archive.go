package functions

// sandbox::fs::unpack and sandbox::fs::pack: archives into and out of a
// sandbox's directories (hutch extensions).

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Archiver unpacks archives into the directories of a sandbox and packs
// them: the sandbox manager, when Deps.Files is one.
type Archiver interface {
	// Unpack streams the archive body (tar, plain, gzip or zstd) into a
	// directory.
	Unpack(ctx context.Context, req api.FsUnpackRequest, body io.Reader) (api.FsUnpackResponse, error)
	// Pack opens a tar.gz of a directory: its entry and a reader of the
	// archive's bytes, which the caller closes.
	Pack(ctx context.Context, req api.FsPackRequest) (api.FsEntry, io.ReadCloser, error)
}

// registerArchives adds the archive functions; without an Archiver they
// answer S219.
func registerArchives(t *Table) {
	add(t, api.FnFsUnpack, "Unpack a tar archive (plain, gzip or zstd; content_b64) into a directory of a sandbox, created when missing: no entry lands outside it, device nodes are skipped (hutch extension; PUT /v1/sandboxes/{id}/archive streams large ones)", t.unpackB64)
	addStream(t, api.FnFsPack, "Stream a directory of a sandbox as a tar.gz: an entry event, then data events (hutch extension)", t.pack)
}

// archiver is the table's Archiver, or an S219 error when it has none.
func (t *Table) archiver() (Archiver, error) {
	if a, ok := t.deps.Files.(Archiver); ok {
		return a, nil
	}
	return nil, errdefs.New(errdefs.CodeFSUnsupported, "this daemon has no archive operations")
}

// Unpack streams the archive body into a directory of a sandbox (see
// Archiver.Unpack); the call is reported as sandbox::fs::unpack.
func (t *Table) Unpack(ctx context.Context, req api.FsUnpackRequest, body io.Reader) (api.FsUnpackResponse, error) {
	a, err := t.archiver()
	var resp api.FsUnpackResponse
	if err == nil {
		resp, err = a.Unpack(ctx, req, body)
	}
	t.observe(api.FnFsUnpack, err)
	return resp, err
}

// unpackB64 is sandbox::fs::unpack with the archive in content_b64.
func (t *Table) unpackB64(ctx context.Context, req api.FsUnpackRequest) (api.FsUnpackResponse, error) {
	a, err := t.archiver()
	if err != nil {
		return api.FsUnpackResponse{}, err
	}
	if req.ContentB64 == "" {
		return api.FsUnpackResponse{}, errdefs.Malformed("give content_b64: the archive (tar, tar.gz or tar.zst), base64")
	}
	data, err := base64.StdEncoding.DecodeString(req.ContentB64)
	if err != nil {
		return api.FsUnpackResponse{}, errdefs.Malformed("content_b64 is not valid base64: %v", err)
	}
	return a.Unpack(ctx, req, bytes.NewReader(data))
}

// pack is sandbox::fs::pack: the archive's bytes as they are made.
func (t *Table) pack(ctx context.Context, req api.FsPackRequest, emit Emitter) (api.FsDownloadResponse, error) {
	a, err := t.archiver()
	if err != nil {
		return api.FsDownloadResponse{}, err
	}
	entry, body, err := a.Pack(ctx, req)
	if err != nil {
		return api.FsDownloadResponse{}, err
	}
	return emitBody(emit, entry, body)
}
