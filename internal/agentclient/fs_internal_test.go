package agentclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// pipeConn joins two pipe ends into one byte stream.
type pipeConn struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p *pipeConn) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

// impatientAgent serves an in-process agent over two pipes and returns a
// ready client of it whose streamed transfers stall after 300 ms without
// progress; everything is undone when the test ends.
func impatientAgent(t *testing.T) (context.Context, *Client) {
	t.Helper()
	streamIdle = 300 * time.Millisecond
	t.Cleanup(func() { streamIdle = StreamIdleTimeout })
	toGuestR, toGuestW, _ := os.Pipe()
	toHostR, toHostW, _ := os.Pipe()
	srv, err := agent.New(agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Serve(ctx, &pipeConn{toGuestR, toHostW, []io.Closer{toGuestR, toHostW}})
	c, err := Dial(&pipeConn{toHostR, toGuestW, []io.Closer{toHostR, toGuestW}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

// TestTransferStalls checks that a transfer making no progress is cut off
// with ErrStalled and that the agent keeps nothing of the upload. (A
// source blocked in Read holds the call until it returns; the agent has
// dropped the upload by then.)
func TestTransferStalls(t *testing.T) {
	ctx, c := impatientAgent(t)
	dir := t.TempDir()
	// The source pauses longer than the idle timeout, then goes on.
	calls := 0
	src := io.MultiReader(bytes.NewReader(make([]byte, 3*ChunkBytes)), readerFunc(func(p []byte) (int, error) {
		if calls++; calls > 2 {
			return 0, io.EOF
		}
		time.Sleep(time.Second)
		return len(p), nil
	}))
	// Unstalled, the source would end in success: only the stall detector
	// can make the upload fail.
	_, err := c.Upload(ctx, &agentv1.FsUploadHeader{Path: dir + "/f"}, src, nil)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("stalled upload: %v, want ErrStalled", err)
	}
	var left, hidden []string
	if !testutil.Poll(30*time.Second, func() bool {
		left, _ = filepath.Glob(dir + "/*")
		hidden, _ = filepath.Glob(dir + "/.*")
		return len(left)+len(hidden) == 0
	}) {
		t.Fatalf("left after a stalled upload: %v %v", left, hidden)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
