package agent

// Archives: Unpack extracts a tar stream into a directory with tarfs, the
// in-root extraction the image store uses on the host, and Pack streams a
// directory as a tar. Like every Fs call they run as the image's user
// (fsuser.go): all their file system work happens on the call's own
// goroutine, whose thread carries the user's credentials, so what they
// make belongs to the user and the kernel checks every access.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/tarfs"
)

// Unpack extracts a tar stream into a directory, created (0755, with its
// parents) when missing: no entry lands outside it, symlinks are made but
// never followed, hard links reach only files inside it, device nodes are
// skipped, modes and times are kept, owners are not (what is made is the
// caller's). Entries are written as they arrive; on a failure the entries
// before it stay.
func (s *fsServer) Unpack(stream agentv1.Fs_UnpackServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		if ctx.Err() != nil {
			return asStatus(ctx, "unpack", "", err)
		}
		return fault(kindAborted, "", "unpack aborted before its header: %v", err).status()
	}
	h := first.GetHeader()
	if h == nil {
		return fault(kindInvalid, "", "unpack: the first message has no header").status()
	}
	p, err := cleanPath("path", h.GetPath())
	if err != nil {
		return asStatus(ctx, "unpack", h.GetPath(), err)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return asStatus(ctx, "unpack", p, err)
	}
	root, err := tarfs.OpenRoot(p)
	if err != nil {
		return asStatus(ctx, "unpack", p, err)
	}
	defer root.Close()
	x := tarfs.NewExtractor(root, tarfs.Options{})
	in := &unpackStream{stream: stream, buf: first.GetData(), eof: first.GetEof()}
	err = x.Extract(in, nil)
	if err == nil {
		// What follows the tar's end (padding) is read to the last message,
		// which says the stream is complete.
		_, err = io.Copy(io.Discard, in)
	}
	st := x.Stats()
	if err != nil {
		return unpackFault(ctx, p, st, err)
	}
	return stream.SendAndClose(&agentv1.FsUnpackResponse{Entries: st.Entries, Bytes: st.Bytes, Skipped: st.Skipped})
}

// unpackFault is the status of an unpack of p that failed with err after
// writing what st counts.
func unpackFault(ctx context.Context, p string, st tarfs.Stats, err error) error {
	if ctx.Err() != nil {
		return asStatus(ctx, "unpack", p, err)
	}
	kind := errnoKind(err)
	var cut *streamCut
	switch {
	case errors.As(err, &cut):
		kind = kindAborted
	case errors.Is(err, tarfs.ErrUnsafe):
		kind = kindInvalid
	}
	return fault(kind, p, "unpack into %s: %v; entries written before it stay: %d", p, err, st.Entries).status()
}

// unpackStream reads the tar bytes of an Unpack's messages: io.EOF after
// the message marked eof, a *streamCut when the stream ends any other way.
type unpackStream struct {
	stream agentv1.Fs_UnpackServer
	buf    []byte
	eof    bool
	err    error
}

func (u *unpackStream) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		switch {
		case u.eof:
			return 0, io.EOF
		case u.err != nil:
			return 0, u.err
		}
		msg, err := u.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended before its last message")
			}
			u.err = &streamCut{err: err}
			return 0, u.err
		}
		u.buf, u.eof = msg.GetData(), msg.GetEof()
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}

// streamCut is an unpack's stream that ended before its last message.
type streamCut struct{ err error }

func (c *streamCut) Error() string { return "the stream was cut off: " + c.err.Error() }
func (c *streamCut) Unwrap() error { return c.err }

// Pack streams a directory (followed when it is a symlink) as a tar: its
// entry first, then the tar's bytes in ChunkBytes messages. Symlinks are
// stored as symlinks; sockets and devices are left out; a walk does not
// enter /proc, /sys and /dev unless it starts in them. A failure midway
// (an unreadable file, one that shrinks while read) ends the stream with
// its status, so the caller never takes a cut tar for a whole one.
func (s *fsServer) Pack(req *agentv1.FsPackRequest, stream agentv1.Fs_PackServer) error {
	ctx := stream.Context()
	p, err := cleanPath("path", req.GetPath())
	if err != nil {
		return asStatus(ctx, "pack", req.GetPath(), err)
	}
	// Opened first, so that a directory the caller may not read is refused
	// before the stream starts.
	dir, err := os.Open(p)
	if err != nil {
		return asStatus(ctx, "pack", p, err)
	}
	fi, err := dir.Stat()
	dir.Close()
	if err != nil {
		return asStatus(ctx, "pack", p, err)
	}
	if !fi.IsDir() {
		return fault(kindWrongType, p, "pack %s: not a directory", p).status()
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return asStatus(ctx, "pack", p, err)
	}
	if err := stream.Send(&agentv1.FsDownloadResponse{Entry: entryOf(filepath.Base(p), fi)}); err != nil {
		return err
	}
	out := &chunkSender{send: func(b []byte) error { return stream.Send(&agentv1.FsDownloadResponse{Data: b}) }}
	bw := bufio.NewWriterSize(out, ChunkBytes)
	_, err = tarfs.Pack(bw, p, tarfs.PackOptions{SkipDir: func(rel string) bool { return pseudoFS[filepath.Join(real, rel)] }})
	if err == nil {
		err = bw.Flush()
	}
	switch {
	case out.err != nil:
		return out.err // the stream itself failed: its status
	case err != nil:
		return fault(errnoKind(err), p, "pack %s: %v", p, err).status()
	}
	return nil
}

// chunkSender sends what is written in messages of at most ChunkBytes.
type chunkSender struct {
	send func([]byte) error
	err  error
}

func (c *chunkSender) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := 0
	for n < len(p) {
		m := min(len(p)-n, ChunkBytes)
		if err := c.send(p[n : n+m]); err != nil {
			c.err = err
			return n, fmt.Errorf("sending: %w", err)
		}
		n += m
	}
	return n, nil
}
