package agent_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// syncBuffer is a log sink the test polls.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fifoPair is the agent's stream as a reattachable gVisor sandbox has it
// (issue 35): two FIFOs the sandbox holds open for reading and writing,
// so that no end of the host's is ever seen as EOF or EPIPE.
func fifoPair(t *testing.T) (in, out string, guest *agenttest.Conn) {
	t.Helper()
	dir := t.TempDir()
	in, out = filepath.Join(dir, "in"), filepath.Join(dir, "out")
	for _, p := range []string{in, out} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gr, err := os.OpenFile(in, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := os.OpenFile(out, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gr.Close(); gw.Close() })
	return in, out, &agenttest.Conn{R: gr, W: gw}
}

// hostEnds opens a host's ends of the FIFOs.
func hostEnds(t *testing.T, in, out string) (w, r *os.File) {
	t.Helper()
	w, err := os.OpenFile(in, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err = os.OpenFile(out, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

// readCloser is a reader with the Close of the file it reads past.
type readCloser struct {
	io.Reader
	io.Closer
}

// TestReattachServesTheNextHost: with Reattach, a host that vanishes
// (its ends closed, as a killed daemon's are) and leaves a broken frame
// behind does not end the agent; a relink then serves a new host, past
// the marker, and a process started by the first host is still there.
// Without Reattach the same broken frame ends ServeLink.
func TestReattachServesTheNextHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in, out, guest := fifoPair(t)
	var logs syncBuffer
	srv, err := agent.New(agent.Options{Reattach: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	link := agent.NewLink(guest, guest)
	served := make(chan error, 1)
	go func() { served <- srv.ServeLink(ctx, link) }()

	// The first host starts a process, then dies mid-frame.
	w1, r1 := hostEnds(t, in, out)
	c1, err := agentclient.Dial(&agenttest.Conn{R: r1, W: w1}, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ev, err := c1.Start(ctx, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sleep", "600"}, Env: []string{"PATH=/usr/bin:/bin"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Recv(); err != nil {
		t.Fatal(err)
	}
	pid := ev.Pid()
	r1.Close()
	w1.Close()
	c1.Close()

	w2, r2 := hostEnds(t, in, out)
	defer w2.Close()
	if _, err := w2.Write([]byte("\xffbroken frame of a dead daemon")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "waiting for a relink") }, "the agent noticing its host is gone")
	select {
	case err := <-served:
		t.Fatalf("the agent stopped serving when its host went away: %v", err)
	default:
	}

	go func() { _ = link.Relink() }() // what agentv1.RelinkSignal does in hutch-agent
	src, err := agentv1.SkipToRelink(r2)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := agentclient.Dial(&agenttest.Conn{R: readCloser{src, r2}, W: w2}, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := c2.Ps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps {
		found = found || p.GetPid() == pid
	}
	if !found {
		t.Errorf("process %d of the first host is gone after the reattach: %v", pid, ps)
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Error(err)
	}

	t.Run("without Reattach", func(t *testing.T) {
		in, out, guest := fifoPair(t)
		srv, err := agent.New(agent.Options{})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.ServeLink(ctx, agent.NewLink(guest, guest)) }()
		w, r := hostEnds(t, in, out)
		defer w.Close()
		defer r.Close()
		if _, err := w.Write([]byte("\xffbroken frame")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-served:
		case <-ctx.Done():
			t.Fatal("a broken session did not end ServeLink")
		}
	})
}
