package agentclient

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// yamuxFrame is a yamux frame header (version 0) and its body.
func yamuxFrame(typ uint8, flags uint16, stream, length uint32, body []byte) []byte {
	b := make([]byte, 12, 12+len(body))
	b[1] = typ
	binary.BigEndian.PutUint16(b[2:], flags)
	binary.BigEndian.PutUint32(b[4:], stream)
	binary.BigEndian.PutUint32(b[8:], length)
	return append(b, body...)
}

// FuzzAgentFrames plays a hostile sandbox: the bytes a compromised agent
// could write on its connection (yamux frames, HTTP/2 and gRPC inside, or
// garbage), then silence. The host's client must not succeed a call on
// them unless they answer it, must end its calls when asked to, and close
// cleanly: Done closes and Err is ErrClosed (or a protocol error, which
// is ErrClosed too).
func FuzzAgentFrames(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("garbage that is no yamux"))
	f.Add(yamuxFrame(1, 1, 2, 0, nil))                                            // the sandbox opens a stream: refused
	f.Add(yamuxFrame(0, 2, 1, 1<<31, nil))                                        // a huge data frame declared
	f.Add(yamuxFrame(2, 1, 0, 7, nil))                                            // a ping
	f.Add(yamuxFrame(3, 0, 0, 2, nil))                                            // go away (internal error)
	f.Add(yamuxFrame(1, 2, 1, 1<<30, nil))                                        // a window update past any bound
	f.Add(yamuxFrame(0, 0, 1, 9, []byte("\x00\x00\x00\x04\x00\x00\x00\x00\x00"))) // an HTTP/2 SETTINGS on the gRPC stream
	f.Fuzz(func(t *testing.T, hostile []byte) {
		host, sandbox := net.Pipe()
		c, err := Dial(host, Options{CallTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = sandbox.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = sandbox.Write(hostile)
		}()
		go func() { _, _ = io.Copy(io.Discard, sandbox) }()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err = c.Info(ctx)
		cancel()
		if err == nil {
			t.Fatalf("Info succeeded on %q", hostile)
		}
		c.Close()
		sandbox.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the client did not end after Close")
		}
		if !errors.Is(c.Err(), ErrClosed) {
			t.Fatalf("Err = %v, want ErrClosed", c.Err())
		}
	})
}
