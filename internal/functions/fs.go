package functions

// sandbox::fs::*: the ten filesystem functions, and the streamed transfers
// the REST transport offers next to them.

import (
	"context"
	"encoding/base64"
	"io"
	"unicode/utf8"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// FS is what the filesystem functions dispatch to: the sandbox manager
// (Deps.Files).
type FS interface {
	Ls(ctx context.Context, req api.FsLsRequest) (api.FsLsResponse, error)
	Stat(ctx context.Context, req api.FsStatRequest) (api.FsEntry, error)
	Mkdir(ctx context.Context, req api.FsMkdirRequest) (api.FsMkdirResponse, error)
	WriteFile(ctx context.Context, req api.FsWriteRequest) (api.FsWriteResponse, error)
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

// downloadChunk is the most bytes one EventData carries.
const downloadChunk = 64 << 10

// registerFS adds the sandbox::fs::* functions when the table has Files,
// and the streamed download in any case (S219 without Files).
func registerFS(t *Table) {
	addStream(t, api.FnFsDownload, "Stream a file's bytes out of a sandbox: an entry event, then data events (hutch extension)", t.download)
	fs := t.deps.Files
	if fs == nil {
		return
	}
	add(t, api.FnFsLs, "List directory contents inside a sandbox", fs.Ls)
	add(t, api.FnFsStat, "Stat a path inside a sandbox", fs.Stat)
	add(t, api.FnFsMkdir, "Create a directory inside a sandbox", fs.Mkdir)
	add(t, api.FnFsWrite, "Write a file inside a sandbox (content or content_b64)", t.write)
	add(t, api.FnFsRead, "Read a file from a sandbox", t.read, Describes[api.FsReadResponse]())
	add(t, api.FnFsRm, "Remove a file or directory inside a sandbox", fs.Rm)
	add(t, api.FnFsMv, "Move or rename a path inside a sandbox", fs.Mv)
	add(t, api.FnFsChmod, "Change file permissions inside a sandbox", fs.Chmod)
	add(t, api.FnFsGrep, "Search for a pattern in files inside a sandbox", fs.Grep)
	add(t, api.FnFsSed, "Search-and-replace in files inside a sandbox", fs.Sed)
	if w, ok := fs.(FileWatcher); ok {
		addStream(t, api.FnFsWatch, "Follow the changes under a directory of a sandbox: create, write, remove, rename and chmod events, until the caller goes or the sandbox stops (hutch extension)",
			func(ctx context.Context, req api.FsWatchRequest, e Emitter) (struct{}, error) {
				return struct{}{}, w.WatchFiles(ctx, req, e.emitData)
			})
	}
}

// fs is the table's FS, or an S219 error when it has none.
func (t *Table) fs() (FS, error) {
	if t.deps.Files != nil {
		return t.deps.Files, nil
	}
	return nil, errdefs.New(errdefs.CodeFSUnsupported, "this daemon has no filesystem operations")
}

// write is sandbox::fs::write: the content from the payload, or as a
// stream (req.Body: REST's PUT body, the engine's channel), written as it
// arrives.
func (t *Table) write(ctx context.Context, req api.FsWriteRequest) (api.FsWriteResponse, error) {
	fs, err := t.fs()
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	if req.Body == nil {
		return fs.WriteFile(ctx, req)
	}
	if req.Content != nil || req.ContentB64 != nil {
		return api.FsWriteResponse{}, errdefs.Malformed("give exactly one of content and content_b64, not both")
	}
	return fs.Upload(ctx, api.FsUploadRequest{SandboxID: req.SandboxID, User: req.User, Path: req.Path, Mode: req.Mode, Parents: req.Parents, Metadata: req.Metadata}, req.Body)
}

// Content is the result of a function whose bytes a transport takes as a
// stream (Params.StreamBody): Result, the function's own result, then the
// bytes: the Pending data events taken from Rest already, then the rest of
// Rest. The caller must close Rest.
type Content struct {
	Result  any
	Pending []Event
	Rest    *Stream
	// Whole says Result holds all the bytes itself (a small file's body).
	Whole bool
}

// read is sandbox::fs::read: api.FnFsDownload read once. Its entry and,
// for a file under api.FsReadMaxBody bytes, its bytes make the result
// (ReadResponse); with req.StreamBody the whole file's bytes follow as a
// stream (a *Content), else the rest of the download is cancelled.
func (t *Table) read(ctx context.Context, req api.FsReadRequest) (any, error) {
	st, err := t.downloadStream(ctx, api.FsDownloadRequest{SandboxID: req.SandboxID, User: req.User, Path: req.Path})
	if err != nil {
		return nil, err
	}
	res, pending, err := readHead(ctx, st)
	if err != nil || !req.StreamBody {
		st.Close()
		return res, err
	}
	return &Content{Result: res, Pending: pending, Rest: st, Whole: res.Body != nil || res.ContentB64 != nil}, nil
}

// downloadStream opens api.FnFsDownload's stream of req.
func (t *Table) downloadStream(ctx context.Context, req api.FsDownloadRequest) (*Stream, error) {
	return NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
		return t.download(ctx, req, emit)
	}, nil), nil
}

// readHead takes a download's entry and, for a file that may be under
// api.FsReadMaxBody bytes, its bytes up to that bound: the result of
// sandbox::fs::read and the data events taken.
func readHead(ctx context.Context, st *Stream) (api.FsReadResponse, []Event, error) {
	ev, err := st.Expect(ctx, EventEntry)
	if err != nil {
		return api.FsReadResponse{}, nil, err
	}
	entry, _ := ev.Data.(api.FsEntry)
	if entry.Size >= api.FsReadMaxBody {
		return ReadResponse(entry, nil, false), nil, nil
	}
	var pending []Event
	var head []byte
	for len(head) < api.FsReadMaxBody {
		ev, err := st.Next(ctx)
		if err == io.EOF {
			return ReadResponse(entry, head, true), pending, nil
		}
		if err != nil {
			return api.FsReadResponse{}, nil, err
		}
		if ev.Type == EventData {
			pending = append(pending, ev)
			head = append(head, ev.Bytes...)
		}
	}
	return ReadResponse(entry, head, false), pending, nil
}

// download is api.FnFsDownload: one read of the file, as it arrives.
func (t *Table) download(ctx context.Context, req api.FsDownloadRequest, emit Emitter) (api.FsDownloadResponse, error) {
	fs, err := t.fs()
	if err != nil {
		return api.FsDownloadResponse{}, err
	}
	entry, body, err := fs.Download(ctx, req)
	if err != nil {
		return api.FsDownloadResponse{}, err
	}
	return emitBody(emit, entry, body)
}

// emitBody emits entry, then body's bytes as EventData events of at most
// downloadChunk bytes, and closes body. Its result counts the bytes sent.
func emitBody(emit Emitter, entry api.FsEntry, body io.ReadCloser) (api.FsDownloadResponse, error) {
	defer body.Close()
	if err := emit.Emit(Event{Type: EventEntry, Data: entry}); err != nil {
		return api.FsDownloadResponse{}, err
	}
	var sent int64
	for {
		buf := make([]byte, downloadChunk) // the consumer keeps it
		n, err := body.Read(buf)
		if n > 0 {
			if err := emit.Emit(Event{Type: EventData, Bytes: buf[:n]}); err != nil {
				return api.FsDownloadResponse{Bytes: sent}, err
			}
			sent += int64(n)
		}
		if err == io.EOF {
			return api.FsDownloadResponse{Bytes: sent}, nil
		}
		if err != nil {
			return api.FsDownloadResponse{Bytes: sent}, err
		}
	}
}

// ReadResponse is the result of sandbox::fs::read for a file described
// by e whose first bytes are head; whole says head is all of it. The
// content is returned only for a whole file under api.FsReadMaxBody bytes:
// as body when it is UTF-8, else as content_b64.
func ReadResponse(e api.FsEntry, head []byte, whole bool) api.FsReadResponse {
	out := api.FsReadResponse{Size: e.Size, Mode: e.Mode, Mtime: e.Mtime}
	if !whole || len(head) >= api.FsReadMaxBody {
		return out
	}
	out.Size = max(out.Size, int64(len(head))) // files of /proc report 0
	if utf8.Valid(head) {
		s := string(head)
		out.Body = &s
	} else {
		s := base64.StdEncoding.EncodeToString(head)
		out.ContentB64 = &s
	}
	return out
}

// FileWatcher follows changes under a directory of a sandbox.
type FileWatcher interface {
	WatchFiles(ctx context.Context, req api.FsWatchRequest, emit func(event string, data any) error) error
}
