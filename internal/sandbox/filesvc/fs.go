// Package filesvc is the files service: the sandbox::fs operations and
// streamed transfers, archives (unpack, pack) and watches. It checks the
// request, takes the sandbox (sandbox.Sandboxes.Acquire) and calls the
// agent, which does the work inside the sandbox; the agent's errors
// become S-codes in the core's one mapping (Handle.FsFail), and its
// failures go to the one failure policy.
package filesvc

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Service answers sandbox::fs::* (functions.FS).
type Service struct{ sbs sandbox.Sandboxes }

// New is the files service over sbs.
func New(sbs sandbox.Sandboxes) *Service { return &Service{sbs: sbs} }

const (
	// maxPathBytes is the longest path a request may name (PATH_MAX).
	maxPathBytes = 4096
	// maxGrepMatches and maxGrepLineBytes cap what a grep may ask for.
	maxGrepMatches   = 100000
	maxGrepLineBytes = 1 << 20
	// Default modes of new directories and files.
	defaultDirMode  = 0o755
	defaultFileMode = 0o644
)

// fsCall runs one unary agent call on sandbox id, as user ("": the
// image's), for operation op ("fs::ls"), after the request was checked.
func fsCall[R any](ctx context.Context, s *Service, id, user, op string, call func(context.Context, *agentclient.Client) (R, error)) (R, error) {
	var zero R
	sb, release, err := s.sbs.Acquire(ctx, id, sandbox.UseCall)
	if err != nil {
		return zero, err
	}
	defer release()
	callCtx, err := sb.AsUser(ctx, user)
	if err != nil {
		return zero, err
	}
	resp, err := call(callCtx, sb.Agent())
	if err != nil {
		return zero, sb.FsFail(ctx, op, err)
	}
	return resp, nil
}

// checkPath checks a request's path field: absolute, without NUL bytes,
// at most maxPathBytes (S210). It returns the path cleaned.
func checkPath(field, p string) (string, error) {
	switch {
	case p == "":
		return "", errdefs.New(errdefs.CodeFSInvalid, "%s is required (an absolute path inside the sandbox)", field)
	case strings.IndexByte(p, 0) >= 0:
		return "", errdefs.New(errdefs.CodeFSInvalid, "%s %q contains a NUL byte", field, spec.Clip(p, 64))
	case len(p) > maxPathBytes:
		return "", errdefs.New(errdefs.CodeFSInvalid, "%s is longer than %d bytes", field, maxPathBytes)
	case !path.IsAbs(p):
		return "", errdefs.New(errdefs.CodeFSInvalid, "%s %q must be an absolute path", field, spec.Clip(p, 64)).
			WithFix(map[string]any{field: "/" + p}, "paths are absolute, inside the sandbox")
	}
	return path.Clean(p), nil
}

// parseMode reads the octal mode of path p (S210); "" is def.
func parseMode(p string, m api.FileMode, def uint32) (uint32, error) {
	if m == "" {
		return def, nil
	}
	s := strings.TrimPrefix(strings.TrimPrefix(string(m), "0o"), "0O")
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 || s == "" {
		return 0, errdefs.New(errdefs.CodeFSInvalid, "mode %q for %s is not an octal mode between 0000 and 7777 (e.g. \"0644\")", spec.Clip(string(m), 16), p)
	}
	return uint32(v), nil
}

// optMode is parseMode for a mode that may be absent (nil).
func optMode(p string, m api.FileMode) (*uint32, error) {
	if m == "" {
		return nil, nil
	}
	v, err := parseMode(p, m, 0)
	return &v, err
}

// modeString renders mode bits as the contract does: "0644".
func modeString(m uint32) string { return fmt.Sprintf("%04o", m&0o7777) }

// entry converts an agent entry.
func entry(e *agentv1.FsEntry) api.FsEntry {
	return api.FsEntry{
		Name:      strings.ToValidUTF8(e.GetName(), "\uFFFD"),
		IsDir:     e.GetIsDir(),
		Size:      e.GetSize(),
		Mode:      modeString(e.GetMode()),
		Mtime:     e.GetMtime(),
		IsSymlink: e.GetIsSymlink(),
		Metadata:  e.GetMetadata(),
	}
}

// Ls lists a directory of the sandbox (sandbox::fs::ls).
func (s *Service) Ls(ctx context.Context, req api.FsLsRequest) (api.FsLsResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsLsResponse{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::ls", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsLsResponse, error) {
		return c.Ls(ctx, &agentv1.FsLsRequest{Path: p})
	})
	if err != nil {
		return api.FsLsResponse{}, err
	}
	out := api.FsLsResponse{Entries: make([]api.FsEntry, 0, len(resp.GetEntries()))}
	for _, e := range resp.GetEntries() {
		out.Entries = append(out.Entries, entry(e))
	}
	return out, nil
}

// Stat describes a path of the sandbox (sandbox::fs::stat).
func (s *Service) Stat(ctx context.Context, req api.FsStatRequest) (api.FsEntry, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsEntry{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::stat", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsEntry, error) {
		return c.Stat(ctx, &agentv1.FsStatRequest{Path: p})
	})
	if err != nil {
		return api.FsEntry{}, err
	}
	return entry(resp), nil
}

// Mkdir creates a directory in the sandbox (sandbox::fs::mkdir).
func (s *Service) Mkdir(ctx context.Context, req api.FsMkdirRequest) (api.FsMkdirResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsMkdirResponse{}, err
	}
	mode, err := parseMode(p, req.Mode, defaultDirMode)
	if err != nil {
		return api.FsMkdirResponse{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::mkdir", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsMkdirResponse, error) {
		return c.Mkdir(ctx, &agentv1.FsMkdirRequest{Path: p, Mode: mode, Parents: req.Parents})
	})
	if err != nil {
		if errdefs.Is(err, errdefs.CodeFSNotFound) && !req.Parents {
			err = errdefs.As(err).WithFix(map[string]any{"parents": true}, "set parents to create missing directories")
		}
		return api.FsMkdirResponse{}, err
	}
	return api.FsMkdirResponse{Created: resp.GetCreated()}, nil
}

// WriteFile writes a file in the sandbox (sandbox::fs::write): exactly one
// of content and content_b64 (S001), through a temporary file, fsync and
// rename, so that the file is never seen half written.
func (s *Service) WriteFile(ctx context.Context, req api.FsWriteRequest) (api.FsWriteResponse, error) {
	var data []byte
	switch {
	case req.Content != nil && req.ContentB64 != nil:
		return api.FsWriteResponse{}, errdefs.Malformed("give exactly one of content and content_b64, not both")
	case req.Content != nil:
		data = []byte(*req.Content)
	case req.ContentB64 != nil:
		var err error
		if data, err = base64.StdEncoding.DecodeString(*req.ContentB64); err != nil {
			return api.FsWriteResponse{}, errdefs.Malformed("content_b64 is not valid base64: %v", err)
		}
	default:
		return api.FsWriteResponse{}, errdefs.Malformed("give exactly one of content (text) and content_b64 (base64 bytes)").
			WithFix(map[string]any{"content": ""}, "an empty file is content \"\"")
	}
	return s.Upload(ctx, api.FsUploadRequest{SandboxID: req.SandboxID, User: req.User, Path: req.Path, Mode: req.Mode, Parents: req.Parents, Metadata: req.Metadata}, bytes.NewReader(data))
}

// Upload writes body to a file of the sandbox as a stream of chunks, never
// holding the whole file. The file appears at its path only once body has
// been read to its end; a body that fails midway is S218 and leaves
// nothing at the path. A missing parent is S211 with the fix parents=true.
func (s *Service) Upload(ctx context.Context, req api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	mode, err := optMode(p, req.Mode)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	defer release()
	callCtx, err := sb.AsUser(ctx, req.User)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	body = failpoint.Reader("upload.mid-stream", body)
	resp, err := sb.Agent().Upload(callCtx, &agentv1.FsUploadHeader{Path: p, Mode: mode, Parents: req.Parents, Metadata: req.Metadata}, body, sb.Touch)
	if err != nil {
		err = sb.FsFail(ctx, "write of "+p, err)
		if errdefs.Is(err, errdefs.CodeFSNotFound) && !req.Parents {
			err = errdefs.As(err).WithFix(map[string]any{"parents": true}, "set parents to create missing directories")
		}
		return api.FsWriteResponse{}, err
	}
	return api.FsWriteResponse{BytesWritten: resp.GetBytesWritten(), Path: strings.ToValidUTF8(resp.GetPath(), "\uFFFD")}, nil
}

// Download opens a streamed read of a regular file of the sandbox: its
// metadata, and a reader of its bytes that reports a cut-off stream as
// S218 (or S216). The caller must close the reader.
func (s *Service) Download(ctx context.Context, req api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	return s.openRead(ctx, req.SandboxID, req.User, req.Path, "download of ", func(ctx context.Context, c *agentclient.Client, p string) (*agentv1.FsEntry, io.ReadCloser, error) {
		return c.Download(ctx, &agentv1.FsDownloadRequest{Path: p})
	})
}

// openRead opens a streamed read of path p of sandbox id, as user ("":
// the image's), through open (a download, a pack; op names it in errors,
// before the path): the entry and a download reader of its bytes.
func (s *Service) openRead(ctx context.Context, id, user, p, op string,
	open func(ctx context.Context, c *agentclient.Client, p string) (*agentv1.FsEntry, io.ReadCloser, error)) (api.FsEntry, io.ReadCloser, error) {
	p, err := checkPath("path", p)
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	sb, release, err := s.sbs.Acquire(ctx, id, sandbox.UseCall)
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	defer release()
	op += p
	callCtx, err := sb.AsUser(ctx, user)
	if err != nil {
		return api.FsEntry{}, nil, err
	}
	e, r, err := open(callCtx, sb.Agent(), p)
	if err != nil {
		return api.FsEntry{}, nil, sb.FsFail(ctx, op, err)
	}
	return entry(e), &download{r: r, sb: sb, ctx: ctx, op: op}, nil
}

// download is the reader of Download: it records activity as data flows
// and maps errors.
type download struct {
	r   io.ReadCloser
	sb  sandbox.Handle
	ctx context.Context
	op  string
}

func (d *download) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.sb.Touch()
	if err != nil && err != io.EOF {
		var na *agentclient.NoAnswerError
		if fe := agenterr.FsDetail(err); fe != nil || d.ctx.Err() != nil || errors.Is(err, agentclient.ErrClosed) || errors.As(err, &na) {
			return n, d.sb.FsFail(d.ctx, d.op, err)
		}
		return n, errdefs.New(errdefs.CodeFSStreamAborted, "%s aborted: %s", d.op, safetext.Line(err.Error(), safetext.MaxLine))
	}
	return n, err
}

func (d *download) Close() error { return d.r.Close() }

// Rm removes a path of the sandbox (sandbox::fs::rm).
func (s *Service) Rm(ctx context.Context, req api.FsRmRequest) (api.FsRmResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsRmResponse{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::rm", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsRmResponse, error) {
		return c.Rm(ctx, &agentv1.FsRmRequest{Path: p, Recursive: req.Recursive})
	})
	if err != nil {
		if errdefs.Is(err, errdefs.CodeFSNotEmpty) {
			err = errdefs.As(err).WithFix(map[string]any{"recursive": true}, "set recursive to remove the directory and its content")
		}
		return api.FsRmResponse{}, err
	}
	return api.FsRmResponse{Removed: resp.GetRemoved()}, nil
}

// Mv renames a path of the sandbox (sandbox::fs::mv).
func (s *Service) Mv(ctx context.Context, req api.FsMvRequest) (api.FsMvResponse, error) {
	src, err := checkPath("src", req.Src)
	if err != nil {
		return api.FsMvResponse{}, err
	}
	dst, err := checkPath("dst", req.Dst)
	if err != nil {
		return api.FsMvResponse{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::mv", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsMvResponse, error) {
		return c.Mv(ctx, &agentv1.FsMvRequest{Src: src, Dst: dst, Overwrite: req.Overwrite})
	})
	if err != nil {
		if errdefs.Is(err, errdefs.CodeFSExists) && !req.Overwrite {
			err = errdefs.As(err).WithFix(map[string]any{"overwrite": true}, "set overwrite to replace the destination")
		}
		return api.FsMvResponse{}, err
	}
	return api.FsMvResponse{Moved: resp.GetMoved()}, nil
}

// Chmod changes the mode and/or owner of paths of the sandbox
// (sandbox::fs::chmod).
func (s *Service) Chmod(ctx context.Context, req api.FsChmodRequest) (api.FsChmodResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsChmodResponse{}, err
	}
	mode, err := optMode(p, req.Mode)
	if err != nil {
		return api.FsChmodResponse{}, err
	}
	if mode == nil && req.UID == nil && req.GID == nil {
		return api.FsChmodResponse{}, errdefs.New(errdefs.CodeFSInvalid, "chmod %s: give mode, uid or gid", p)
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::chmod", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsChmodResponse, error) {
		return c.Chmod(ctx, &agentv1.FsChmodRequest{Path: p, Mode: mode, Uid: req.UID, Gid: req.GID, Recursive: req.Recursive})
	})
	if err != nil {
		return api.FsChmodResponse{}, err
	}
	return api.FsChmodResponse{Updated: resp.GetUpdated()}, nil
}

// searchFilter is the file selection of a grep or sed.
func searchFilter(recursive *bool, include, exclude []string) *agentv1.FsFilter {
	return &agentv1.FsFilter{Recursive: recursive == nil || *recursive, IncludeGlob: include, ExcludeGlob: exclude}
}

// Grep searches files of the sandbox (sandbox::fs::grep).
func (s *Service) Grep(ctx context.Context, req api.FsGrepRequest) (api.FsGrepResponse, error) {
	p, err := checkPath("path", req.Path)
	if err != nil {
		return api.FsGrepResponse{}, err
	}
	if req.Pattern == "" {
		return api.FsGrepResponse{}, errdefs.New(errdefs.CodeFSInvalid, "grep %s: pattern is empty", p)
	}
	maxMatches, err := bounded("max_matches", req.MaxMatches, api.FsGrepDefaultMaxMatches, maxGrepMatches)
	if err != nil {
		return api.FsGrepResponse{}, err
	}
	maxLine, err := bounded("max_line_bytes", req.MaxLineBytes, api.FsGrepDefaultMaxLineBytes, maxGrepLineBytes)
	if err != nil {
		return api.FsGrepResponse{}, err
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::grep", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsGrepResponse, error) {
		return c.Grep(ctx, &agentv1.FsGrepRequest{
			Path: p, Pattern: req.Pattern, IgnoreCase: req.IgnoreCase,
			Filter:     searchFilter(req.Recursive, req.IncludeGlob, req.ExcludeGlob),
			MaxMatches: maxMatches, MaxLineBytes: maxLine,
		})
	})
	if err != nil {
		return api.FsGrepResponse{}, err
	}
	out := api.FsGrepResponse{Matches: make([]api.FsGrepMatch, 0, len(resp.GetMatches())), Truncated: resp.GetTruncated()}
	for _, mt := range resp.GetMatches() {
		if int64(len(out.Matches)) == maxMatches {
			out.Truncated = true
			break
		}
		content := mt.GetContent()
		if int64(len(content)) > maxLine {
			content = content[:maxLine]
		}
		out.Matches = append(out.Matches, api.FsGrepMatch{
			Path:    strings.ToValidUTF8(mt.GetPath(), "\uFFFD"),
			Line:    mt.GetLine(),
			Content: strings.ToValidUTF8(string(content), "\uFFFD"),
		})
	}
	return out, nil
}

// bounded resolves an optional positive limit: 0 is def, more than most
// is lowered to most, a negative value is S210.
func bounded(field string, v, def, most int64) (int64, error) {
	switch {
	case v < 0:
		return 0, errdefs.New(errdefs.CodeFSInvalid, "%s must not be negative, got %d", field, v)
	case v == 0:
		return def, nil
	}
	return min(v, most), nil
}

// Sed replaces text in files of the sandbox (sandbox::fs::sed). Bad input
// (both or neither of files and path, a relative path, an empty pattern, a
// bad regex) fails before any file is touched.
func (s *Service) Sed(ctx context.Context, req api.FsSedRequest) (api.FsSedResponse, error) {
	areq := &agentv1.FsSedRequest{
		Pattern: req.Pattern, Replacement: req.Replacement,
		Regex: req.Regex == nil || *req.Regex, FirstOnly: req.FirstOnly, IgnoreCase: req.IgnoreCase,
		Filter: searchFilter(req.Recursive, req.IncludeGlob, req.ExcludeGlob),
	}
	switch {
	case len(req.Files) > 0 && req.Path != "":
		return api.FsSedResponse{}, errdefs.New(errdefs.CodeFSInvalid, "sed %s: give either files or path, not both", spec.Clip(req.Path, 256))
	case len(req.Files) == 0 && req.Path == "":
		return api.FsSedResponse{}, errdefs.New(errdefs.CodeFSInvalid, "sed: give files (a list of files) or path (a file or directory)")
	case req.Pattern == "":
		return api.FsSedResponse{}, errdefs.New(errdefs.CodeFSInvalid, "sed: pattern is empty")
	case req.Path != "":
		p, err := checkPath("path", req.Path)
		if err != nil {
			return api.FsSedResponse{}, err
		}
		areq.Path = p
	}
	for i, f := range req.Files {
		p, err := checkPath(fmt.Sprintf("files[%d]", i), f)
		if err != nil {
			return api.FsSedResponse{}, err
		}
		areq.Files = append(areq.Files, p)
	}
	resp, err := fsCall(ctx, s, req.SandboxID, req.User, "fs::sed", func(ctx context.Context, c *agentclient.Client) (*agentv1.FsSedResponse, error) {
		return c.Sed(ctx, areq)
	})
	if err != nil {
		return api.FsSedResponse{}, err
	}
	out := api.FsSedResponse{Results: make([]api.FsSedResult, 0, len(resp.GetResults()))}
	for _, r := range resp.GetResults() {
		res := api.FsSedResult{Path: strings.ToValidUTF8(r.GetPath(), "\uFFFD"), Replacements: r.GetReplacements(), Success: r.GetError() == nil}
		if r.GetError() != nil {
			e := agenterr.FsFault(r.GetError())
			res.Replacements, res.Error, res.Code = 0, e.Message, string(e.Code)
		}
		out.TotalReplacements += res.Replacements
		out.Results = append(out.Results, res)
	}
	return out, nil
}
