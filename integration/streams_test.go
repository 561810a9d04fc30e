package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// TestStreamSlowReaderHoldsTheWriter: a streamed exec read in the framed
// form (issue 46: 5) by a client slower than the process is flow
// controlled end to end: the process's writes wait for the reader, so what
// it has written is never more than the buffers on the way (pipe, ring,
// the agent connection's windows, the daemon's one-event queue, the
// sockets) ahead of what the client has read, and the daemon's memory
// does not grow with what the reader has yet to take. Without flow control
// the process would finish its 96 MiB far ahead of the reader.
func TestStreamSlowReaderHoldsTheWriter(t *testing.T) {
	const (
		pieces = 96 // of 1 MiB
		// aheadLimit bounds written − read: the buffers on the way hold
		// about 25 MiB at most (an 8 MiB gRPC window the largest).
		aheadLimit = 40 << 20
		// memoryLimitKiB bounds the daemon's peak RSS growth: as the
		// 1 GiB stream's, as the Go heap's churn adds to it.
		memoryLimitKiB = streamMemoryKiB
	)
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	// The process records how many pieces its writes have handed over.
	script := fmt.Sprintf(`import os, sys
b = b'0123456789abcdef' * 65536
for i in range(1, %d + 1):
    sys.stdout.buffer.write(b); sys.stdout.buffer.flush()
    with open('/tmp/written.tmp', 'w') as f: f.write(str(i))
    os.replace('/tmp/written.tmp', '/tmp/written')
`, pieces)
	ctx := context.Background()
	written := func() int64 {
		r, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/tmp/written"})
		if err != nil {
			if env := envelopeOf(t, err); env.Code == "S211" {
				return 0 // not yet written
			}
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(*r.Body), 10, 64)
		if err != nil {
			t.Fatalf("/tmp/written holds %q", *r.Body)
		}
		return n << 20
	}
	base := d.statusKiB("VmHWM")
	var read, checked, ahead int64
	res, err := d.c.ExecStreamFramed(ctx, api.ExecRequest{SandboxID: id, TimeoutMs: setupTimeoutMs, Argv: []string{"python3", "-c", script}},
		func(ev client.FramedEvent) error {
			if ev.Type != api.EventStdout {
				return nil
			}
			read += int64(len(ev.Bytes))
			// A slow reader: each 4 MiB it stops to see how far ahead the
			// writer is, a round trip to the sandbox.
			if read-checked >= 4<<20 {
				checked = read
				w := written()
				ahead = max(ahead, w-read)
				if w-read > aheadLimit {
					return fmt.Errorf("the process has written %d MiB with %d MiB read", w>>20, read>>20)
				}
			}
			return nil
		})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || read != pieces<<20 {
		t.Fatalf("read %d bytes, result %+v, %v", read, res, err)
	}
	growth := d.statusKiB("VmHWM") - base
	t.Logf("the writer was at most %.1f MiB ahead of the reader; the daemon's peak RSS grew by %d KiB", float64(ahead)/(1<<20), growth)
	if growth > memoryLimitKiB {
		t.Fatalf("the daemon's peak RSS grew by %d KiB streaming %d MiB to a slow reader", growth, pieces)
	}
}
