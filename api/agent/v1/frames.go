package agentv1

import (
	"encoding/binary"
	"io"
)

// yamux's frame header: version, type, flags, stream id, length; a data
// frame's length is that of the body written right after it.
const (
	frameHeaderBytes = 12
	frameTypeData    = 0
)

// maxCoalescedBody is the largest body written together with its header:
// past it, the copy would cost more than the write it saves.
const maxCoalescedBody = 64 << 10

// CoalesceFrames returns conn with each yamux data frame written in one
// write instead of two: yamux writes a frame's header and its body
// separately, and across the sandbox wall every write is a system call
// inside the sandbox and a wake-up of the reader on the other side, which
// finds only the header and must read again. Both sides of the agent
// session wrap their byte stream with it. yamux writes from one goroutine
// only (its send loop), which the returned conn relies on.
func CoalesceFrames(conn io.ReadWriteCloser) io.ReadWriteCloser {
	return &framedConn{ReadWriteCloser: conn}
}

// framedConn holds a data frame's header until its body is written.
type framedConn struct {
	io.ReadWriteCloser
	held bool
	buf  []byte
}

func (c *framedConn) Write(p []byte) (int, error) {
	if !c.held {
		if len(p) == frameHeaderBytes && p[1] == frameTypeData {
			if n := binary.BigEndian.Uint32(p[8:]); n > 0 && n <= maxCoalescedBody {
				c.buf = append(c.buf[:0], p...)
				c.held = true
				return len(p), nil
			}
		}
		return c.ReadWriteCloser.Write(p)
	}
	c.held = false
	c.buf = append(c.buf, p...)
	n, err := c.ReadWriteCloser.Write(c.buf)
	if cap(c.buf) > 2*maxCoalescedBody {
		c.buf = nil
	}
	return max(n-frameHeaderBytes, 0), err
}
