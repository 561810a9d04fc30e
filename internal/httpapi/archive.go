package httpapi

// The archive routes: PUT /v1/sandboxes/{id}/archive?path=DIR unpacks the
// body (a tar, plain, gzip or zstd) into DIR; GET streams DIR as a tar.gz.
// Both stream, like the file routes: the daemon never holds the archive.

import (
	"net/http"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// archivePath is the route of archives.
const archivePath = "/v1/sandboxes/{id}/archive"

// archiveQuery are the query parameters of the archive routes.
var archiveQuery = []queryParam{q("path", "string", "the directory inside the sandbox (absolute)"), q("user", "string", "as this user of the image (name or uid[:gid])")}

// archiveRoutes are the archive routes, for New's table.
func (s *server) archiveRoutes() []route {
	return []route{
		{"PUT", archivePath, s.unpack, false, routeDoc{fn: api.FnFsUnpack, rawBody: "application/x-tar", query: archiveQuery,
			summary: "Unpack a tar archive into a directory, created when missing: the body is the archive (plain, gzip or zstd), streamed; no entry lands outside the directory"}},
		{"GET", archivePath, s.pack, false, routeDoc{raw: "application/gzip", query: archiveQuery,
			summary: "Download a directory as a tar.gz, streamed (sandbox::fs::pack): symlinks stored as symlinks, modes, mtimes, numeric owners"}},
	}
}

// unpack is PUT …/archive?path=DIR: the body, streamed to the agent,
// unpacked into DIR. The answer is the result of sandbox::fs::unpack.
func (s *server) unpack(r *http.Request, _ []byte) (any, error) {
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return s.table.Unpack(r.Context(), api.FsUnpackRequest{SandboxID: r.PathValue("id"), Path: r.URL.Query().Get("path"), User: r.URL.Query().Get("user")}, body)
}

// pack is GET …/archive?path=DIR: sandbox::fs::pack rendered as the
// archive's bytes (application/gzip), with the directory's mtime as
// Last-Modified and its mode in X-Hutch-Mode. As for a download, an error
// before the first byte is an error envelope and a stream cut off later
// cuts the response off.
func (s *server) pack(r *http.Request, _ []byte) (any, error) {
	res, err := functions.Invoke(r.Context(), s.table, api.FnFsPack, api.FsPackRequest{
		SandboxID: r.PathValue("id"),
		Path:      r.URL.Query().Get("path"),
		User:      r.URL.Query().Get("user"),
	})
	if err != nil {
		return nil, err
	}
	return &fileStream{s: s, ctx: r.Context(), st: res.(*functions.Stream), contentType: "application/gzip"}, nil
}
