package agentv1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// Relinking: a sandbox restored from a checkpoint wakes with its agent in
// the middle of a session whose other end is gone (the daemon that held it,
// or the parent of a fork), on new stdin and stdout pipes. The host then
// sends the agent RelinkSignal; the agent drops that session without
// writing another byte of it, writes RelinkMarker to its stream and serves
// a new session from the next byte the host sends. The host reads and
// discards everything before the marker (what the old session wrote after
// the restore) and sends nothing before it has seen it.

// ReattachFlag is hutch-agent's argument in a sandbox that outlives its
// daemon (issue 35): a session that ends while the stream still works
// leaves the agent waiting for a relink instead of ending it.
const ReattachFlag = "--reattach"

// RelinkSignal tells the agent to start a new session (PID 1 catches it).
const RelinkSignal = syscall.SIGUSR2

// RelinkMarker ends the old session on the agent's stream. It begins with a
// byte no yamux frame begins with.
var RelinkMarker = []byte("\xffhutch-agent relinked\n")

// MaxRelinkJunk bounds what the host discards while it waits for the
// marker: more, and the stream is not an agent's.
const MaxRelinkJunk = 16 << 20

// ErrNoRelink is SkipToRelink's error when the stream ends, or passes
// MaxRelinkJunk bytes, without the marker.
var ErrNoRelink = errors.New("the agent did not relink")

// SkipToRelink reads r up to and including RelinkMarker and returns a
// reader of what follows it.
func SkipToRelink(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	last := RelinkMarker[len(RelinkMarker)-1]
	var window []byte
	for junk := -len(RelinkMarker); junk <= MaxRelinkJunk; {
		chunk, err := br.ReadSlice(last)
		junk += len(chunk)
		window = append(window, chunk...)
		if bytes.HasSuffix(window, RelinkMarker) {
			if junk > MaxRelinkJunk {
				break
			}
			return br, nil
		}
		if len(window) > len(RelinkMarker) {
			window = window[len(window)-len(RelinkMarker):]
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: %v", ErrNoRelink, err)
		}
	}
	return nil, fmt.Errorf("%w within %d bytes", ErrNoRelink, MaxRelinkJunk)
}
