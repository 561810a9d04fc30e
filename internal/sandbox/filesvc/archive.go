package filesvc

// Archives: a tar archive unpacked into a directory of the sandbox
// (sandbox::fs::unpack), and a directory packed as a tar.gz
// (sandbox::fs::pack). The daemon decompresses what it takes (gzip or
// zstd, told by their magic bytes, decoded with bounded memory) and gzips
// what it sends, so the agent deals in plain tar both ways; the extraction
// itself happens in the agent, inside the sandbox, as the image's user,
// with the in-root extraction the image store uses (tarfs). What the
// agent sends back is checked (agentclient) or passed on as bytes.

import (
	"context"
	"errors"
	"io"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/compressed"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Unpack streams the archive body into directory req.Path of the sandbox,
// created when missing, never holding more than a chunk of it. A body cut
// off midway is S218 and a stream that is not a valid archive S210; in
// both cases, and on any failure of the agent's, the entries unpacked
// before the failure stay (the file being written is removed).
func (s *Service) Unpack(ctx context.Context, req api.FsUnpackRequest, body io.Reader) (api.FsUnpackResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsUnpackResponse{}, err
	}
	tarStream, format, err := compressed.NewReader(body)
	if err != nil {
		return api.FsUnpackResponse{}, archiveSourceError(p, err)
	}
	defer tarStream.Close()
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.FsUnpackResponse{}, err
	}
	defer release()
	callCtx, err := sb.AsUser(ctx, req.User)
	if err != nil {
		return api.FsUnpackResponse{}, err
	}
	resp, err := sb.Agent().Unpack(callCtx, &agentv1.FsUnpackHeader{Path: p}, tarStream, sb.Touch)
	if err != nil {
		if se := (*agentclient.SourceError)(nil); errors.As(err, &se) && ctx.Err() == nil {
			return api.FsUnpackResponse{}, archiveSourceError(p, se.Err)
		}
		return api.FsUnpackResponse{}, sb.FsFail(ctx, "unpack into "+p, err)
	}
	return api.FsUnpackResponse{Entries: resp.GetEntries(), Bytes: resp.GetBytes(), Skipped: resp.GetSkipped(), Compression: string(format)}, nil
}

// archiveSourceError is the failure to read an archive's bytes: S210 when
// they are not a valid compressed stream, S218 when the body itself
// failed.
func archiveSourceError(p string, err error) error {
	if ce := (*compressed.CorruptError)(nil); errors.As(err, &ce) {
		return errdefs.New(errdefs.CodeFSInvalid, "unpack into %s: %v; the entries before this point were written", p, ce).
			WithFix(nil, "send a tar archive: plain, gzip or zstd")
	}
	return errdefs.New(errdefs.CodeFSStreamAborted, "unpack into %s aborted: %v; the entries before this point were written", p, err).
		WithFix(nil, "send the whole archive again: its entries replace what they find")
}

// Pack opens a tar.gz of directory req.Path of the sandbox: its entry
// (Size 0: the archive's size is not known ahead) and a reader of the
// archive, compressed as it is read, that reports a cut-off stream as
// S218 (or the agent's error). The caller must close the reader.
func (s *Service) Pack(ctx context.Context, req api.FsPackRequest) (api.FsEntry, io.ReadCloser, error) {
	e, r, err := s.openRead(ctx, req.SandboxID, req.User, req.Path, "pack of ", func(ctx context.Context, c *agentclient.Client, p string) (*agentv1.FsEntry, io.ReadCloser, error) {
		return c.Pack(ctx, &agentv1.FsPackRequest{Path: p})
	})
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	e.Size = 0
	return e, compressed.Gzipped(r), nil
}
