package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Bounds of the filesystem calls.
const (
	// FSCallTimeout is the deadline of one unary filesystem call (a grep
	// or sed over a large tree is the slow case).
	FSCallTimeout = 2 * time.Minute
	// FSMaxAnswerBytes bounds the answer of a unary filesystem call (an ls
	// of a huge directory, a grep with many matches).
	FSMaxAnswerBytes = 64 << 20
	// ChunkBytes is the size of one data message of a streamed transfer.
	ChunkBytes = agentv1.ChunkBytes
	// StreamIdleTimeout aborts a streamed transfer that makes no progress
	// for this long, in either direction.
	StreamIdleTimeout = time.Minute
	// MaxTransferDuration bounds a streamed transfer as a whole.
	MaxTransferDuration = 6 * time.Hour
)

// ErrStalled is the cause of a streamed transfer aborted because it made
// no progress for StreamIdleTimeout.
var ErrStalled = errors.New("the transfer made no progress for " + StreamIdleTimeout.String())

// streamIdle is StreamIdleTimeout; tests shorten it.
var streamIdle = StreamIdleTimeout

// SourceError is an upload aborted because reading its source failed; the
// agent discarded what it had received.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return "reading the upload's source: " + e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// fsUserValue is u encoded for agentv1.FsUserKey, once per client; ""
// for nil (calls run as the agent).
func fsUserValue(u *agentv1.FsUser) string {
	if u == nil {
		return ""
	}
	return u.String()
}

// fsUserOverride is the context key of WithFsUser.
type fsUserOverride struct{}

// WithFsUser makes the Fs calls made with ctx run as u instead of the
// client's user (the image's).
func WithFsUser(ctx context.Context, u *agentv1.FsUser) context.Context {
	return context.WithValue(ctx, fsUserOverride{}, u.String())
}

// withFsUser names the user v (or ctx's WithFsUser) in the metadata of a
// call of method when it is an Fs call and the user is not "": the agent
// then runs it as that user.
func withFsUser(ctx context.Context, method, v string) context.Context {
	if o, ok := ctx.Value(fsUserOverride{}).(string); ok {
		v = o
	}
	if v == "" || !agentv1.IsFsMethod(method) {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, agentv1.FsUserKey, v)
}

// fsUserUnary is the client interceptor that applies withFsUser to unary
// calls.
func fsUserUnary(u *agentv1.FsUser) grpc.UnaryClientInterceptor {
	v := fsUserValue(u)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(withFsUser(ctx, method, v), method, req, reply, cc, opts...)
	}
}

// fsUserStream is the client interceptor that applies withFsUser to
// streamed calls.
func fsUserStream(u *agentv1.FsUser) grpc.StreamClientInterceptor {
	v := fsUserValue(u)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(withFsUser(ctx, method, v), desc, cc, method, opts...)
	}
}

// fsClient is the Fs service over the client's connection.
func (c *Client) fsClient() agentv1.FsClient { return agentv1.NewFsClient(c.cc) }

// fsUnary runs one unary filesystem call with FSCallTimeout and an answer
// bounded by FSMaxAnswerBytes. Errors are the agent's status (with its
// FsError detail), a deadline, or ErrClosed, wrapped with name.
func fsUnary[Req, Resp any](ctx context.Context, c *Client, name string,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	var zero Resp
	ctx, cancel, err := c.call(ctx, FSCallTimeout)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	defer cancel()
	resp, err := call(ctx, req, grpc.MaxCallRecvMsgSize(FSMaxAnswerBytes))
	if err := c.callError(ctx, err); err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return resp, nil
}

// Ls lists a directory in the sandbox.
func (c *Client) Ls(ctx context.Context, req *agentv1.FsLsRequest) (*agentv1.FsLsResponse, error) {
	return fsUnary(ctx, c, "fs ls", c.fsClient().Ls, req)
}

// Stat describes a path in the sandbox.
func (c *Client) Stat(ctx context.Context, req *agentv1.FsStatRequest) (*agentv1.FsEntry, error) {
	return fsUnary(ctx, c, "fs stat", c.fsClient().Stat, req)
}

// Mkdir creates a directory in the sandbox.
func (c *Client) Mkdir(ctx context.Context, req *agentv1.FsMkdirRequest) (*agentv1.FsMkdirResponse, error) {
	return fsUnary(ctx, c, "fs mkdir", c.fsClient().Mkdir, req)
}

// ReadFile reads a small file of the sandbox.
func (c *Client) ReadFile(ctx context.Context, req *agentv1.FsReadFileRequest) (*agentv1.FsReadFileResponse, error) {
	resp, err := fsUnary(ctx, c, "fs read", c.fsClient().ReadFile, req)
	if err == nil && int64(len(resp.GetContent())) >= max(req.GetMaxBytes(), 0) && resp.GetHasContent() {
		return nil, fmt.Errorf("fs read: the agent sent %d bytes, more than the %d asked for", len(resp.GetContent()), req.GetMaxBytes())
	}
	return resp, err
}

// Rm removes a path in the sandbox.
func (c *Client) Rm(ctx context.Context, req *agentv1.FsRmRequest) (*agentv1.FsRmResponse, error) {
	return fsUnary(ctx, c, "fs rm", c.fsClient().Rm, req)
}

// Mv renames a path in the sandbox.
func (c *Client) Mv(ctx context.Context, req *agentv1.FsMvRequest) (*agentv1.FsMvResponse, error) {
	return fsUnary(ctx, c, "fs mv", c.fsClient().Mv, req)
}

// Chmod changes mode and owner of paths in the sandbox.
func (c *Client) Chmod(ctx context.Context, req *agentv1.FsChmodRequest) (*agentv1.FsChmodResponse, error) {
	return fsUnary(ctx, c, "fs chmod", c.fsClient().Chmod, req)
}

// Grep searches files in the sandbox.
func (c *Client) Grep(ctx context.Context, req *agentv1.FsGrepRequest) (*agentv1.FsGrepResponse, error) {
	return fsUnary(ctx, c, "fs grep", c.fsClient().Grep, req)
}

// Sed replaces text in files of the sandbox.
func (c *Client) Sed(ctx context.Context, req *agentv1.FsSedRequest) (*agentv1.FsSedResponse, error) {
	return fsUnary(ctx, c, "fs sed", c.fsClient().Sed, req)
}

// transfer is the context of one streamed transfer: bounded by
// MaxTransferDuration, ended by the session's end, and cancelled with
// ErrStalled when kick is not called for StreamIdleTimeout.
type transfer struct {
	ctx    context.Context
	kick   func()
	cancel func()
	c      *Client
}

func (c *Client) startTransfer(ctx context.Context) (*transfer, error) {
	ctx, cancelCall, err := c.call(ctx, MaxTransferDuration)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(streamIdle, func() { cancel(ErrStalled) })
	return &transfer{
		ctx:  ctx,
		kick: func() { t.Reset(streamIdle) },
		cancel: func() {
			t.Stop()
			cancel(context.Canceled)
			cancelCall()
		},
		c: c,
	}, nil
}

// error reports a failed stream operation: ErrStalled, ErrClosed, or the
// agent's status.
func (t *transfer) error(err error) error {
	if errors.Is(context.Cause(t.ctx), ErrStalled) {
		return ErrStalled
	}
	return t.c.callError(t.ctx, err)
}

// Upload streams r into the file that h names, in ChunkBytes messages. The
// agent commits the file only once r has reached EOF; when reading r fails
// (a *SourceError), the call is cancelled and the agent keeps nothing.
// progress, when not nil, is called after each chunk.
func (c *Client) Upload(ctx context.Context, h *agentv1.FsUploadHeader, r io.Reader, progress func()) (*agentv1.FsUploadResponse, error) {
	t, err := c.startTransfer(ctx)
	if err != nil {
		return nil, fmt.Errorf("fs upload: %w", err)
	}
	defer t.cancel()
	stream, err := c.fsClient().Upload(t.ctx)
	if err != nil {
		return nil, fmt.Errorf("fs upload: %w", t.error(err))
	}
	// A failed Send means the agent ended the stream: CloseAndRecv says why.
	if err := stream.Send(&agentv1.FsUploadRequest{Header: h}); err == nil {
		err = sendAll(func(data []byte, eof bool) error {
			return stream.Send(&agentv1.FsUploadRequest{Data: data, Eof: eof})
		}, r, t.kick, progress)
		if err != nil {
			return nil, err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, fmt.Errorf("fs upload: %w", t.error(err))
	}
	return resp, nil
}

// sendAll sends r's data in ChunkBytes messages through send, the last
// one marked eof. It returns nil as well when the agent ended the stream
// early (send gives io.EOF): CloseAndRecv then reports why.
func sendAll(send func(data []byte, eof bool) error, r io.Reader, kick, progress func()) error {
	buf := make([]byte, ChunkBytes)
	// A source slower than a chunk per StreamIdleTimeout still makes
	// progress: every read that brings data counts.
	r = kickReader{r: r, kick: kick}
	for {
		n, err := fill(r, buf)
		// Only the source's own io.EOF ends the file: a body cut off
		// midway reads as io.ErrUnexpectedEOF, which is a failure.
		eof := err == io.EOF
		if err != nil && !eof {
			return &SourceError{Err: err}
		}
		// Send encodes the message before it returns: buf may be reused.
		if serr := send(buf[:n], eof); serr != nil {
			return nil
		}
		kick()
		if progress != nil {
			progress()
		}
		if eof {
			return nil
		}
	}
}

// kickReader calls kick after every read that brings data.
type kickReader struct {
	r    io.Reader
	kick func()
}

func (k kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.kick()
	}
	return n, err
}

// fill reads from r until buf is full or r fails, and returns r's error
// as it is (io.EOF at the end), unlike io.ReadFull.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Download opens a streamed download of a regular file of the sandbox. It
// returns once the agent has answered: the file's entry, and a reader of
// its data that ends with io.EOF after exactly the file's size (when the
// entry reports one) or with the error that cut the stream off. Close the
// reader to release the call.
func (c *Client) Download(ctx context.Context, req *agentv1.FsDownloadRequest) (*agentv1.FsEntry, io.ReadCloser, error) {
	d, err := c.openRead(ctx, "fs download", func(ctx context.Context) (agentv1.Fs_DownloadClient, error) {
		return c.fsClient().Download(ctx, req)
	})
	if err != nil {
		return nil, nil, err
	}
	d.size = d.entry.GetSize()
	return d.entry, d, nil
}

// openRead opens a server-streamed transfer whose first message is an
// entry and the others data (Download, Pack), and returns its reader
// once the entry has come.
func (c *Client) openRead(ctx context.Context, name string, open func(context.Context) (agentv1.Fs_DownloadClient, error)) (*downloadReader, error) {
	t, err := c.startTransfer(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	stream, err := open(t.ctx)
	if err == nil {
		var first *agentv1.FsDownloadResponse
		if first, err = stream.Recv(); err == nil {
			if first.GetEntry() == nil {
				t.cancel()
				return nil, fmt.Errorf("%s: the agent's first message has no entry", name)
			}
			t.kick()
			return &downloadReader{name: name, stream: stream, t: t, entry: first.GetEntry(), buf: first.GetData()}, nil
		}
	}
	t.cancel()
	return nil, fmt.Errorf("%s: %w", name, t.error(err))
}

// downloadReader reads the data messages of a download or a pack.
type downloadReader struct {
	name   string
	stream agentv1.Fs_DownloadClient
	t      *transfer
	entry  *agentv1.FsEntry
	// size is the file's size; 0 means unknown (read to the end).
	size int64
	// read counts the bytes received; buf is what is left of the last
	// message; err ends the stream.
	read int64
	buf  []byte
	err  error
}

func (d *downloadReader) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		msg, err := d.stream.Recv()
		switch {
		case err == io.EOF && d.size > 0 && d.read != d.size:
			d.err = fmt.Errorf("%s: the stream ended after %d of %d bytes", d.name, d.read, d.size)
		case err == io.EOF:
			d.err = io.EOF
		case err != nil:
			d.err = fmt.Errorf("%s: %w", d.name, d.t.error(err))
		default:
			d.t.kick()
			d.buf = msg.GetData()
			d.read += int64(len(d.buf))
			if d.size > 0 && d.read > d.size {
				d.buf, d.err = nil, fmt.Errorf("%s: the agent sent more than the file's %d bytes", d.name, d.size)
			}
		}
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	// A reader that takes a chunk slowly still makes progress.
	d.t.kick()
	return n, nil
}

// Close ends the call; a download not read to its end is cancelled.
func (d *downloadReader) Close() error {
	d.t.cancel()
	return nil
}

// maxWatchEventBytes bounds one watch event from the agent (a path).
const maxWatchEventBytes = 64 << 10

// Watch follows the changes under a directory in the sandbox until ctx
// ends or the agent ends the stream; the first event is "ready". The
// stream's events are the agent's, hostile input: the caller checks them.
func (c *Client) Watch(ctx context.Context, req *agentv1.FsWatchRequest) (*Watch, error) {
	ctx, cancel, err := c.call(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("fs watch: %w", err)
	}
	stream, err := c.fsClient().Watch(ctx, req, grpc.MaxCallRecvMsgSize(maxWatchEventBytes))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fs watch: %w", c.callError(ctx, err))
	}
	return &Watch{ctx: ctx, cancel: cancel, stream: stream, c: c}, nil
}

// Watch is a watch in progress.
type Watch struct {
	ctx    context.Context
	cancel context.CancelFunc
	stream agentv1.Fs_WatchClient
	c      *Client
}

// Recv returns the next event; io.EOF when the agent ended the watch.
func (w *Watch) Recv() (*agentv1.FsWatchEvent, error) {
	e, err := w.stream.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("fs watch: %w", w.c.callError(w.ctx, err))
	}
	return e, err
}

// Close ends the watch.
func (w *Watch) Close() { w.cancel() }
