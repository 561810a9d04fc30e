package agentclient

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// Bounds of the archive calls' messages from the agent: an unpack's answer
// is three numbers; a pack's messages are an entry or ChunkBytes of data.
const (
	maxUnpackAnswerBytes = 4 << 10
	maxPackMessageBytes  = ChunkBytes + 64<<10
)

// tarBlock is the size of a tar header: every entry of a stream takes one.
const tarBlock = 512

// Unpack streams the tar stream r (plain) into the directory h names, in
// ChunkBytes messages, and returns the agent's counts, checked against
// what was sent: counts a stream of that size cannot hold are a protocol
// violation. When reading r fails (a *SourceError) the call is cancelled;
// the agent keeps the entries it wrote until then. progress, when not
// nil, is called after each chunk.
func (c *Client) Unpack(ctx context.Context, h *agentv1.FsUnpackHeader, r io.Reader, progress func()) (*agentv1.FsUnpackResponse, error) {
	t, err := c.startTransfer(ctx)
	if err != nil {
		return nil, fmt.Errorf("fs unpack: %w", err)
	}
	defer t.cancel()
	stream, err := c.fsClient().Unpack(t.ctx, grpc.MaxCallRecvMsgSize(maxUnpackAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("fs unpack: %w", t.error(err))
	}
	src := &countingReader{r: r}
	// A failed Send means the agent ended the stream: CloseAndRecv says why.
	if err := stream.Send(&agentv1.FsUnpackRequest{Header: h}); err == nil {
		err = sendAll(func(data []byte, eof bool) error {
			return stream.Send(&agentv1.FsUnpackRequest{Data: data, Eof: eof})
		}, src, t.kick, progress)
		if err != nil {
			return nil, err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, fmt.Errorf("fs unpack: %w", t.error(err))
	}
	if !unpackCountsFit(resp, src.n) {
		return nil, fmt.Errorf("fs unpack: %w", c.violate(fmt.Sprintf("an unpack of %d bytes answered %d entries, %d bytes, %d skipped",
			src.n, resp.GetEntries(), resp.GetBytes(), resp.GetSkipped())))
	}
	return resp, nil
}

// unpackCountsFit reports whether a tar stream of sent bytes can hold
// what resp counts: each entry, written or skipped, takes a header block,
// and file content takes bytes of its own.
func unpackCountsFit(resp *agentv1.FsUnpackResponse, sent int64) bool {
	e, b, s := resp.GetEntries(), resp.GetBytes(), resp.GetSkipped()
	if e < 0 || b < 0 || s < 0 || e > sent/tarBlock || s > sent/tarBlock {
		return false
	}
	headers := (e + s) * tarBlock // no overflow: each is at most sent/tarBlock
	return headers <= sent && b <= sent-headers
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Pack opens a streamed tar of a directory of the sandbox. It returns once
// the agent has answered: the directory's entry, and a reader of the tar's
// bytes that ends with io.EOF when the agent ended the stream cleanly, or
// with the error that cut it off. The bytes are the agent's, passed on
// unread. Close the reader to release the call.
func (c *Client) Pack(ctx context.Context, req *agentv1.FsPackRequest) (*agentv1.FsEntry, io.ReadCloser, error) {
	d, err := c.openRead(ctx, "fs pack", func(ctx context.Context) (agentv1.Fs_DownloadClient, error) {
		return c.fsClient().Pack(ctx, req, grpc.MaxCallRecvMsgSize(maxPackMessageBytes))
	})
	if err != nil {
		return nil, nil, err
	}
	if !d.entry.GetIsDir() {
		d.Close()
		return nil, nil, fmt.Errorf("fs pack: %w", c.violate("a pack of something that is not a directory"))
	}
	return d.entry, d, nil
}
