package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// archivePath is the archive URL of directory p in sandbox id.
func archivePath(id, p, user string) (string, error) {
	sp, err := sandboxPath(id)
	if err != nil {
		return "", err
	}
	q := url.Values{"path": {p}}
	if user != "" {
		q.Set("user", user)
	}
	return sp + "/archive?" + q.Encode(), nil
}

// UploadArchive streams the tar archive body (plain, gzip or zstd) into
// directory req.Path of sandbox req.SandboxID, created when missing (PUT
// /v1/sandboxes/{id}/archive, sandbox::fs::unpack). No entry lands outside
// the directory. Entries are written as they arrive: an upload cut off
// midway leaves the entries before the cut (S218).
func (c *Client) UploadArchive(ctx context.Context, req api.FsUnpackRequest, body io.Reader) (api.FsUnpackResponse, error) {
	var out api.FsUnpackResponse
	p, err := archivePath(req.SandboxID, req.Path, req.User)
	if err != nil {
		return out, err
	}
	if body == nil {
		body = http.NoBody
	}
	resp, err := c.send(ctx, http.MethodPut, p, body, "application/x-tar")
	if err != nil {
		return out, err
	}
	defer closeBody(resp)
	return out, decodeJSON(resp, &out)
}

// DownloadArchive opens a tar.gz of directory req.Path of sandbox
// req.SandboxID (GET /v1/sandboxes/{id}/archive, sandbox::fs::pack):
// symlinks stored as symlinks, modes, mtimes and numeric owners. Reading
// fails (rather than ending early) when the stream is cut off. The bytes
// come from the sandbox: extract them as untrusted input (the client's
// bound, WithMaxDownload, counts the compressed bytes; bound what the
// extraction writes too). The caller closes the reader.
func (c *Client) DownloadArchive(ctx context.Context, req api.FsPackRequest) (io.ReadCloser, error) {
	p, err := archivePath(req.SandboxID, req.Path, req.User)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, http.MethodGet, p, nil, "")
	if err != nil {
		return nil, err
	}
	return c.limitDownload(resp.Body, resp.ContentLength)
}
