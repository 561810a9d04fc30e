package agentclient_test

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
)

// TestPingFloodEndsOnlyItsSession (issue 38: 5): code in a sandbox writes
// yamux pings into the agent's stream and never reads the answers. Past
// agentclient.MaxPings the daemon ends that session with a protocol error
// naming the pings, instead of holding a goroutine per ping; another
// sandbox's session keeps working.
func TestPingFloodEndsOnlyItsSession(t *testing.T) {
	const flood = 100_000
	other := dialFake(t, &fakeAgent{}, agentclient.Options{})
	if _, err := other.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	host, guest := agenttest.Pipe(t)
	c, err := agentclient.Dial(host, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	wrote := make(chan int, 1)
	go func() {
		ping := make([]byte, 12)
		ping[1] = 2                             // ping
		binary.BigEndian.PutUint16(ping[2:], 1) // SYN: asks an answer
		n := 0
		for ; n < flood; n++ {
			binary.BigEndian.PutUint32(ping[8:], uint32(n))
			if _, err := guest.Write(ping); err != nil {
				break
			}
		}
		wrote <- n
	}()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session of a sandbox that floods pings did not end")
	}
	var pe *agentclient.ProtocolError
	if err := c.Err(); !errors.As(err, &pe) || !strings.Contains(err.Error(), "pings") {
		t.Errorf("session ended with %v, want a ProtocolError naming the pings", err)
	}
	if extra := runtime.NumGoroutine() - before; extra > 4*agentclient.MaxPings {
		t.Errorf("%d more goroutines during the flood, want at most %d", extra, 4*agentclient.MaxPings)
	}
	c.Close()
	if n := <-wrote; n >= flood {
		t.Errorf("the host read all %d pings", n)
	}
	if _, err := other.Info(context.Background()); err != nil {
		t.Errorf("another sandbox's session after the flood: %v", err)
	}
}
