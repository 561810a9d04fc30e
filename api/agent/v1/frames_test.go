package agentv1

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/hashicorp/yamux"
)

// writes records each Write it is given.
type writes struct {
	io.ReadWriteCloser
	got [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.got = append(w.got, bytes.Clone(p))
	return len(p), nil
}

// header is a yamux frame header of type typ for stream 1 with length n.
func header(typ byte, n uint32) []byte {
	h := make([]byte, frameHeaderBytes)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:], 1)
	binary.BigEndian.PutUint32(h[8:], n)
	return h
}

func TestCoalesceFrames(t *testing.T) {
	const windowUpdate = 1
	big := bytes.Repeat([]byte{'b'}, maxCoalescedBody+1)
	tests := []struct {
		name   string
		writes [][]byte
		want   [][]byte // the writes that reach the stream
	}{
		{
			name:   "a data frame's header and body in one write",
			writes: [][]byte{header(frameTypeData, 5), []byte("hello")},
			want:   [][]byte{append(header(frameTypeData, 5), "hello"...)},
		},
		{
			name:   "a window update has no body",
			writes: [][]byte{header(windowUpdate, 1<<20), header(frameTypeData, 2), []byte("hi")},
			want:   [][]byte{header(windowUpdate, 1<<20), append(header(frameTypeData, 2), "hi"...)},
		},
		{
			name:   "an empty data frame (a flag only) has no body",
			writes: [][]byte{header(frameTypeData, 0), header(frameTypeData, 1), []byte("x")},
			want:   [][]byte{header(frameTypeData, 0), append(header(frameTypeData, 1), 'x')},
		},
		{
			name:   "a large body is not copied",
			writes: [][]byte{header(frameTypeData, uint32(len(big))), big},
			want:   [][]byte{header(frameTypeData, uint32(len(big))), big},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writes{}
			c := CoalesceFrames(w)
			for _, p := range tt.writes {
				if n, err := c.Write(p); err != nil || n != len(p) {
					t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
				}
			}
			if len(w.got) != len(tt.want) {
				t.Fatalf("%d writes reached the stream, want %d", len(w.got), len(tt.want))
			}
			for i := range w.got {
				if !bytes.Equal(w.got[i], tt.want[i]) {
					t.Errorf("write %d = %d bytes %q…, want %d bytes", i, len(w.got[i]), w.got[i][:min(len(w.got[i]), 20)], len(tt.want[i]))
				}
			}
		})
	}
}

// TestCoalesceFramesSession runs a yamux session with both sides wrapped:
// what one side writes, the other reads, byte for byte.
func TestCoalesceFramesSession(t *testing.T) {
	a, b := net.Pipe()
	client, err := yamux.Client(CoalesceFrames(a), yamux.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := yamux.Server(CoalesceFrames(b), yamux.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	msg := bytes.Repeat([]byte("0123456789"), 100_000) // past the window and maxCoalescedBody
	go func() {
		s, err := client.Open()
		if err != nil {
			return
		}
		s.Write(msg)
		s.Close()
	}()
	s, err := server.Accept()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(msg))
	}
}
