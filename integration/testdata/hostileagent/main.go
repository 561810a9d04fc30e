// Command hostileagent is hutch-agent with an attacker in it, for the
// integration tests of what a sandbox whose PID 1 is hostile can do to the
// daemon: code in the sandbox cannot reach the real agent's stream (it
// holds a capability no process it starts has, which refuses them ptrace
// access, /proc/1/fd included), so these tests put the attacker there
// themselves. It serves like the real agent until a process in the sandbox
// creates one of its trigger files:
//
//	/tmp/hostile-flood  it writes yamux frames that each open a stream
//	                    toward the daemon (an even id, the agent's side)
//	                    carrying yamux's whole initial window of data:
//	                    256 streams, 64 MiB
//	/tmp/hostile-death  it writes 200 KiB of terminal escapes (a title
//	                    change, a screen clear, a bidi override) to its
//	                    stderr, which the host keeps for the stop reason,
//	                    and exits
package main

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/agent"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	stdio, err := agent.Stdio()
	if err != nil {
		log.Error("opening the agent stream", "err", err)
		os.Exit(1)
	}
	conn := &sharedConn{ReadWriteCloser: stdio}
	srv, err := agent.New(agent.Options{Version: "hostile", ReapOrphans: true, Logger: log})
	if err != nil {
		log.Error("starting the agent", "err", err)
		os.Exit(1)
	}
	go attackOnTrigger(conn)
	if err := srv.Serve(context.Background(), conn); err != nil {
		log.Error("serving", "err", err)
		os.Exit(1)
	}
}

// sharedConn is the agent's stream, written whole frame by whole frame by
// the agent and the attacker.
type sharedConn struct {
	io.ReadWriteCloser
	mu sync.Mutex
}

func (c *sharedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ReadWriteCloser.Write(b)
}

// attackOnTrigger waits for a trigger file and carries out its attack.
func attackOnTrigger(conn *sharedConn) {
	for {
		if _, err := os.Stat("/tmp/hostile-flood"); err == nil {
			flood(conn)
			return
		}
		if _, err := os.Stat("/tmp/hostile-death"); err == nil {
			chunk := "\x1b]0;pwned\x07\x1b[2J\u202e" + strings.Repeat("A", 40)
			_, _ = os.Stderr.WriteString(strings.Repeat(chunk, 4000))
			os.Exit(15)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flood opens 256 streams from the agent's side, each with 256 KiB of data.
func flood(conn *sharedConn) {
	data := make([]byte, 256<<10)
	for i := uint32(1); i <= 256; i++ {
		frame := make([]byte, 12, 12+len(data))
		// yamux: version 0, type data, flags SYN, stream id, length.
		binary.BigEndian.PutUint16(frame[2:], 1)
		binary.BigEndian.PutUint32(frame[4:], 2*i)
		binary.BigEndian.PutUint32(frame[8:], uint32(len(data)))
		if _, err := conn.Write(append(frame, data...)); err != nil {
			return
		}
	}
}
