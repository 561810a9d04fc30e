package engineapi

// Stream bodies of sandbox::fs::read and sandbox::fs::write over the
// engine: fs::read answers with content, the reader reference of a channel
// that hutch fills with the file's bytes once the caller opens it; fs::write
// takes as content the reader reference of a channel the caller writes the
// body into. Both map onto the table's streamed Upload and Download, so no
// file is ever held whole in memory.

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// The functions whose bodies may travel as streams.
const (
	fnFsRead  = "sandbox::fs::read"
	fnFsWrite = "sandbox::fs::write"
)

// streamedRead is the result of sandbox::fs::read over the engine.
type streamedRead struct {
	api.FsReadResponse
	// Content is the reader reference of the file's bytes.
	Content *api.StreamRef `json:"content,omitempty"`
}

// readFile runs sandbox::fs::read and adds the stream of the file's bytes.
// When no channel can be opened, a file small enough to have a body is
// answered without one.
func (s *Server) readFile(ctx context.Context, data json.RawMessage) (any, error) {
	res, err := s.table.Call(ctx, fnFsRead, data)
	if err != nil {
		return nil, err
	}
	read, ok := res.(api.FsReadResponse)
	if !ok {
		return res, nil
	}
	var req api.FsReadRequest
	if err := functions.Decode(data, &req); err != nil {
		return nil, err
	}
	ref, err := s.streamFile(auth.WithOwner(s.ctx, auth.OwnerFrom(ctx)), api.FsDownloadRequest(req))
	if err != nil {
		if read.Body != nil || read.ContentB64 != nil {
			return read, nil
		}
		return nil, err
	}
	return streamedRead{FsReadResponse: read, Content: &ref}, nil
}

// streamFile opens a channel that hutch fills with the file once its reader
// attaches, and returns the reader's reference. ctx (the caller's owner,
// the server's lifetime) outlives the invocation: the reader may attach
// after the answer.
func (s *Server) streamFile(ctx context.Context, req api.FsDownloadRequest) (api.StreamRef, error) {
	_, refs, err := s.channels.create(auth.OwnerFrom(ctx), 0)
	if err != nil {
		return api.StreamRef{}, err
	}
	c, err := s.channels.openRef(refs.Writer)
	if err != nil {
		return api.StreamRef{}, err
	}
	w := &channelWriter{ctx: ctx, c: c}
	if !s.track() {
		w.CloseWithError(errors.New("hutch is shutting down"))
		return api.StreamRef{}, errdefs.New(errdefs.CodeBootFailed, "hutch is shutting down")
	}
	go func() {
		defer s.active.Done()
		select {
		case <-c.readerAttached:
		case <-c.aborted:
			w.CloseWithError(c.abortErr())
			return
		case <-ctx.Done():
			w.CloseWithError(errors.New("hutch is shutting down"))
			return
		}
		_, body, err := s.table.Download(ctx, req)
		if err != nil {
			w.CloseWithError(err)
			return
		}
		_, err = io.Copy(w, body)
		body.Close()
		w.CloseWithError(err)
	}()
	return refs.Reader, nil
}

// streamedWrite reports whether a sandbox::fs::write payload carries its
// content as a stream reference; it returns the reference and the payload
// without content.
func streamedWrite(data json.RawMessage) (api.StreamRef, json.RawMessage, bool, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return api.StreamRef{}, nil, false, nil // the table explains what is wrong
	}
	raw := fields["content"]
	if len(raw) == 0 || raw[0] != '{' {
		return api.StreamRef{}, nil, false, nil
	}
	var ref api.StreamRef
	if err := functions.Decode(raw, &ref); err != nil {
		return api.StreamRef{}, nil, false, errdefs.Malformed("content must be a string or a stream reference {channel_id, access_key, direction}: %v", err)
	}
	if _, ok := fields["content_b64"]; ok {
		return api.StreamRef{}, nil, false, errdefs.Malformed("give exactly one of content and content_b64, not both")
	}
	delete(fields, "content")
	rest, err := json.Marshal(fields)
	return ref, rest, true, err
}

// writeStream runs sandbox::fs::write with the body read from the channel
// of ref, which must be a reader reference (hutch reads the body).
func (s *Server) writeStream(ctx context.Context, ref api.StreamRef, rest json.RawMessage) (any, error) {
	var req api.FsUploadRequest
	if err := functions.Decode(rest, &req); err != nil {
		return nil, err
	}
	if ref.Direction != api.StreamRead {
		return nil, errdefs.New(errdefs.CodeFSInvalid, "content must be the reader reference of a channel (direction %q): hutch reads the body from it", api.StreamRead)
	}
	c, err := s.channels.openRef(ref)
	if err != nil {
		return nil, err
	}
	r := &channelReader{ctx: ctx, c: c}
	defer r.Close()
	return s.table.Upload(ctx, req, r)
}
