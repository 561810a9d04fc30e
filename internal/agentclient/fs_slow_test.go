package agentclient

import (
	"bytes"
	"io"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// TestSlowTransfersAreProgress checks that a source or a reader slower
// than one chunk per idle timeout, but never idle that long, completes:
// progress is counted per read, not per chunk.
func TestSlowTransfersAreProgress(t *testing.T) {
	ctx, c := impatientAgent(t)
	// Each read comes 100 ms after the last, a chunk takes about 3.2 s:
	// an idle timeout between the two, with room for a busy machine.
	streamIdle = 1500 * time.Millisecond
	path := t.TempDir() + "/f"
	// 1.5 chunks in 32 KiB pieces, 100 ms apart.
	const piece = 32 << 10
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
