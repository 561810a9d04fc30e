package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// dialChunk is the most bytes one Dial message carries: a large write
// crosses the sandbox's wall in few messages (issue 46: 5).
const dialChunk = 256 << 10

// Dial connects to a TCP port on the sandbox's loopback, through the
// agent, and returns the connection. It lives until it is closed, ctx
// ends or the session does; the agent's messages are bounded by the
// session's message limit.
func (c *Client) Dial(ctx context.Context, port uint16) (net.Conn, error) {
	ctx, cancelCall, err := c.call(ctx, 0)
	if err != nil {
		return nil, err
	}
	stream, err := c.rpc.Dial(ctx)
	if err == nil {
		err = stream.Send(&agentv1.DialMessage{Port: uint32(port)})
	}
	var first *agentv1.DialMessage
	if err == nil {
		first, err = stream.Recv()
	}
	if err == nil && !first.GetConnected() {
		err = c.violate("a dial answered without connecting")
	}
	if err != nil {
		cancelCall()
		return nil, fmt.Errorf("dial port %d: %w", port, c.callError(ctx, err))
	}
	return &dialConn{stream: stream, cancel: cancelCall, port: port}, nil
}

// dialConn is a Dial stream as a net.Conn. Deadlines are not supported
// (its users set none); Close ends the call.
type dialConn struct {
	stream agentv1.Agent_DialClient
	cancel context.CancelFunc
	port   uint16

	rmu sync.Mutex
	buf []byte // read and not yet taken
	err error  // ends reading

	wmu    sync.Mutex
	closed bool
}

func (d *dialConn) Read(p []byte) (int, error) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	for len(d.buf) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		msg, err := d.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				d.err = io.EOF
			} else {
				d.err = fmt.Errorf("port %d: %w", d.port, err)
			}
			continue
		}
		d.buf = msg.GetData()
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

// WriteTo writes each message's bytes to w as they come, until the end
// of the connection (nil) or an error: io.Copy from the connection makes
// one write per message (up to 256 KiB), not one per 32 KiB of its own
// buffer, and copies nothing.
func (d *dialConn) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for {
		d.rmu.Lock()
		b := d.buf
		d.buf = nil
		if len(b) == 0 && d.err == nil {
			msg, err := d.stream.Recv()
			switch {
			case errors.Is(err, io.EOF):
				d.err = io.EOF
			case err != nil:
				d.err = fmt.Errorf("port %d: %w", d.port, err)
			default:
				b = msg.GetData()
			}
		}
		err := d.err
		d.rmu.Unlock()
		if len(b) > 0 {
			n, werr := w.Write(b)
			written += int64(n)
			if werr != nil {
				return written, werr
			}
			continue
		}
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return written, err
		}
	}
}

func (d *dialConn) Write(p []byte) (int, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.closed {
		return 0, net.ErrClosed
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), dialChunk)
		if err := d.stream.Send(&agentv1.DialMessage{Data: p[:n]}); err != nil {
			return written, fmt.Errorf("port %d: %w", d.port, err)
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite ends the host's half: the port reads EOF.
func (d *dialConn) CloseWrite() error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.closed = true
	return d.stream.CloseSend()
}

func (d *dialConn) Close() error {
	d.wmu.Lock()
	d.closed = true
	d.wmu.Unlock()
	d.cancel()
	return nil
}

func (d *dialConn) LocalAddr() net.Addr  { return dialAddr("hutch") }
func (d *dialConn) RemoteAddr() net.Addr { return dialAddr(fmt.Sprintf("sandbox:%d", d.port)) }

func (d *dialConn) SetDeadline(time.Time) error      { return nil }
func (d *dialConn) SetReadDeadline(time.Time) error  { return nil }
func (d *dialConn) SetWriteDeadline(time.Time) error { return nil }

type dialAddr string

func (a dialAddr) Network() string { return "hutch" }
func (a dialAddr) String() string  { return string(a) }
