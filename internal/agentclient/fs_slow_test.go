package agentclient

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	agentv1 "github.com/sbx-dev/sbx/api/agent/v1"
	"github.com/sbx-dev/sbx/internal/agent"
)

// TestSlowTransfersAreProgress checks that a source or a reader slower
// than one chunk per idle timeout, but never idle that long, completes:
// progress is counted per read, not per chunk.
func TestSlowTransfersAreProgress(t *testing.T) {
	streamIdle = 300 * time.Millisecond
	defer func() { streamIdle = StreamIdleTimeout }()
	toGuestR, toGuestW, _ := os.Pipe()
	toHostR, toHostW, _ := os.Pipe()
	srv, err := agent.New(agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, &pipeConn{toGuestR, toHostW, []io.Closer{toGuestR, toHostW}})
	c, err := Dial(&pipeConn{toHostR, toGuestW, []io.Closer{toHostR, toGuestW}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/f"
	// 1.5 chunks in 128 KiB pieces, 100 ms apart: about 1.2 s per chunk.
	const piece = 128 << 10
	size := ChunkBytes + ChunkBytes/2
	sent := 0
	src := readerFunc(func(p []byte) (int, error) {
		if sent == size {
			return 0, io.EOF
		}
		time.Sleep(100 * time.Millisecond)
		n := min(len(p), piece, size-sent)
		sent += n
		return n, nil
	})
	if _, err := c.Upload(ctx, &agentv1.FsUploadHeader{Path: path}, src, nil); err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	_, r, err := c.Download(ctx, &agentv1.FsDownloadRequest{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	buf := make([]byte, piece)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("slow download: %v after %d bytes", err, got.Len())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Len() != size {
		t.Fatalf("downloaded %d bytes, want %d", got.Len(), size)
	}
}
