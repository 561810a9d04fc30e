package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"

	"github.com/hutch-dev/hutch/api"
)

// fs runs sandbox::fs::{op} on sandbox id through POST
// /v1/sandboxes/{id}/fs/{op}.
func (c *Client) fs(ctx context.Context, op, id string, in, out any) error {
	p, err := sandboxPath(id)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p+"/fs/"+op, in, out)
}

// FsLs lists a directory of a sandbox (sandbox::fs::ls).
func (c *Client) FsLs(ctx context.Context, req api.FsLsRequest) (api.FsLsResponse, error) {
	var out api.FsLsResponse
	return out, c.fs(ctx, "ls", req.SandboxID, req, &out)
}

// FsStat describes a path of a sandbox (sandbox::fs::stat).
func (c *Client) FsStat(ctx context.Context, req api.FsStatRequest) (api.FsEntry, error) {
	var out api.FsEntry
	return out, c.fs(ctx, "stat", req.SandboxID, req, &out)
}

// FsMkdir creates a directory in a sandbox (sandbox::fs::mkdir).
func (c *Client) FsMkdir(ctx context.Context, req api.FsMkdirRequest) (api.FsMkdirResponse, error) {
	var out api.FsMkdirResponse
	return out, c.fs(ctx, "mkdir", req.SandboxID, req, &out)
}

// FsWrite writes a file in a sandbox from content or content_b64
// (sandbox::fs::write). For large files use Upload.
func (c *Client) FsWrite(ctx context.Context, req api.FsWriteRequest) (api.FsWriteResponse, error) {
	var out api.FsWriteResponse
	return out, c.fs(ctx, "write", req.SandboxID, req, &out)
}

// FsRead reads a file of a sandbox (sandbox::fs::read): body or
// content_b64 for files under 1 MiB, metadata always. For large files use
// Download.
func (c *Client) FsRead(ctx context.Context, req api.FsReadRequest) (api.FsReadResponse, error) {
	var out api.FsReadResponse
	return out, c.fs(ctx, "read", req.SandboxID, req, &out)
}

// FsRm removes a path of a sandbox (sandbox::fs::rm).
func (c *Client) FsRm(ctx context.Context, req api.FsRmRequest) (api.FsRmResponse, error) {
	var out api.FsRmResponse
	return out, c.fs(ctx, "rm", req.SandboxID, req, &out)
}

// FsMv renames a path of a sandbox (sandbox::fs::mv).
func (c *Client) FsMv(ctx context.Context, req api.FsMvRequest) (api.FsMvResponse, error) {
	var out api.FsMvResponse
	return out, c.fs(ctx, "mv", req.SandboxID, req, &out)
}

// FsChmod changes mode and owner of paths of a sandbox (sandbox::fs::chmod).
func (c *Client) FsChmod(ctx context.Context, req api.FsChmodRequest) (api.FsChmodResponse, error) {
	var out api.FsChmodResponse
	return out, c.fs(ctx, "chmod", req.SandboxID, req, &out)
}

// FsGrep searches files of a sandbox (sandbox::fs::grep).
func (c *Client) FsGrep(ctx context.Context, req api.FsGrepRequest) (api.FsGrepResponse, error) {
	var out api.FsGrepResponse
	return out, c.fs(ctx, "grep", req.SandboxID, req, &out)
}

// FsSed replaces text in files of a sandbox (sandbox::fs::sed).
func (c *Client) FsSed(ctx context.Context, req api.FsSedRequest) (api.FsSedResponse, error) {
	var out api.FsSedResponse
	return out, c.fs(ctx, "sed", req.SandboxID, req, &out)
}

// filesPath is the streamed-transfer URL of path in sandbox id.
func filesPath(id, p string, query url.Values) (string, error) {
	sp, err := sandboxPath(id)
	if err != nil {
		return "", err
	}
	if query == nil {
		query = url.Values{}
	}
	query.Set("path", p)
	return sp + "/files?" + query.Encode(), nil
}

// Upload streams body into the file req.Path of sandbox req.SandboxID
// (PUT /v1/sandboxes/{id}/files). The daemon never holds the whole file,
// and the file appears only once body has been sent to its end: an upload
// cut off midway leaves nothing at the path.
func (c *Client) Upload(ctx context.Context, req api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	var out api.FsWriteResponse
	q := url.Values{}
	if req.Mode != "" {
		q.Set("mode", string(req.Mode))
	}
	if req.Parents {
		q.Set("parents", "true")
	}
	if req.User != "" {
		q.Set("user", req.User)
	}
	p, err := filesPath(req.SandboxID, req.Path, q)
	if err != nil {
		return out, err
	}
	if body == nil {
		body = http.NoBody
	}
	resp, err := c.send(ctx, http.MethodPut, p, body, "application/octet-stream")
	if err != nil {
		return out, err
	}
	defer closeBody(resp)
	return out, decodeJSON(resp, &out)
}

// Download opens a streamed read of the regular file req.Path of sandbox
// req.SandboxID (GET /v1/sandboxes/{id}/files). It returns the file's
// metadata and its bytes; reading them fails (rather than ending early)
// when the stream is cut off, and with *DownloadTooLargeError past the
// client's bound (WithMaxDownload). The caller closes the reader.
func (c *Client) Download(ctx context.Context, req api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	var q url.Values
	if req.User != "" {
		q = url.Values{"user": {req.User}}
	}
	p, err := filesPath(req.SandboxID, req.Path, q)
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	resp, err := c.send(ctx, http.MethodGet, p, nil, "")
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	entry := api.FsEntry{Name: path.Base(req.Path), Mode: resp.Header.Get("X-Hutch-Mode"), Size: max(resp.ContentLength, 0)}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		entry.Mtime = t.Unix()
	}
	body, err := c.limitDownload(resp.Body, resp.ContentLength)
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	return entry, body, nil
}

// decodeJSON decodes a 2xx answer's body into out.
func decodeJSON(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}
