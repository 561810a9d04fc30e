// Package agenttest runs a real agent for tests: the agent's server and an
// agentclient.Client joined by in-memory pipes, through the same yamux and
// gRPC stack a sandbox uses. Only the byte stream differs: kernel pipes
// instead of the sandbox's stdio.
package agenttest

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agentclient"
)

// Conn joins a read end and a write end into one byte stream.
type Conn struct {
	R io.ReadCloser
	W io.WriteCloser
}

func (c *Conn) Read(p []byte) (int, error)  { return c.R.Read(p) }
func (c *Conn) Write(p []byte) (int, error) { return c.W.Write(p) }

// Close closes both ends.
func (c *Conn) Close() error { return errors.Join(c.R.Close(), c.W.Close()) }

// Pipe returns the two ends of a byte stream made of two kernel pipes.
func Pipe(t testing.TB) (host, guest *Conn) {
	t.Helper()
	toGuestR, toGuestW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toHostR, toHostW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	host = &Conn{R: toHostR, W: toGuestW}
	guest = &Conn{R: toGuestR, W: toHostW}
	t.Cleanup(func() {
		host.Close()
		guest.Close()
	})
	return host, guest
}

// Agent is an in-process agent and a client connected to it.
type Agent struct {
	Client *agentclient.Client
	// Guest is the agent's end of the stream; closing it is what a sandbox
	// exiting looks like to the client.
	Guest *Conn
	// Served is closed when the agent's Serve has returned.
	Served <-chan struct{}
}

// Start serves an in-process agent (opts.ReapOrphans must stay unset: the
// test process waits for children of its own) and dials it with copts. The
// client is ready when Start returns; both are closed at the end of the test.
func Start(t testing.TB, opts agent.Options, copts agentclient.Options) *Agent {
	t.Helper()
	srv, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	host, guest := Pipe(t)
	served := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(served)
		if err := srv.Serve(ctx, guest); err != nil {
			t.Errorf("agent serve: %v", err)
		}
	}()
	c, err := agentclient.Dial(host, copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-served
	})
	ready, cancelReady := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelReady()
	if err := c.WaitReady(ready); err != nil {
		t.Fatal(err)
	}
	return &Agent{Client: c, Guest: guest, Served: served}
}
