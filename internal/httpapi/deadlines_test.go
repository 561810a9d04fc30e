package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// streamFake is the shared fake plus the two streamed file operations: an
// upload reads its body to the end, a download is endless zeros.
type streamFake struct {
	*functionstest.Fake
	functions.FS
	// uploads gets the outcome of every upload's read of its body.
	uploads chan error
	// closed is closed when a download's reader is closed.
	closed chan struct{}
}

func newStreamFake() *streamFake {
	return &streamFake{Fake: &functionstest.Fake{}, uploads: make(chan error, 1), closed: make(chan struct{})}
}

// deps are the table's dependencies over f, its filesystem included.
func (f *streamFake) deps() functions.Deps {
	return functionstest.DepsOf(f)
}

func (f *streamFake) Upload(_ context.Context, _ api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	n, err := io.Copy(io.Discard, body)
	f.uploads <- err
	return api.FsWriteResponse{BytesWritten: n}, err
}

func (f *streamFake) Download(context.Context, api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	return api.FsEntry{Name: "zeros", Size: 1 << 40}, zeros{f.closed}, nil
}

type zeros struct{ closed chan struct{} }

func (z zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
func (z zeros) Close() error               { close(z.closed); return nil }

// timedServer serves sb with every connection timeout set to timeout.
func timedServer(t *testing.T, deps functions.Deps, timeout time.Duration) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = httpapi.NewServer(functions.New(deps), httpapi.Options{ReadTimeout: timeout, WriteTimeout: timeout, IdleTimeout: timeout})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// putHead opens a connection to addr and sends the head of an upload that
// declares size bytes.
func putHead(t *testing.T, addr string, size int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "PUT /v1/sandboxes/%s/files?path=/f HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", functionstest.DefaultID, addr, size)
	return conn
}

// waitClosed reads conn until the server closes it, failing after limit
// (far past the server's own timeouts).
func waitClosed(t *testing.T, conn net.Conn, limit time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %s", limit)
	}
}

// TestDeclaredBodyLengthIsNotAllocated sends a request that declares a
// body of the full limit and delivers a byte of it: the handler must not
// allocate what was only declared.
func TestDeclaredBodyLengthIsNotAllocated(t *testing.T) {
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{})
	req := newRequest("POST", "/v1/sandboxes", io.MultiReader(strings.NewReader("{"), errReader{}))
	req.ContentLength = httpapi.DefaultMaxBodyBytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("a request that declared %d bytes and sent 1 allocated %d bytes", httpapi.DefaultMaxBodyBytes, got)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestStalledUploadIsCut checks that an upload whose next 64 KiB does not
// arrive within the read timeout is cut, and the upload sees an error.
func TestStalledUploadIsCut(t *testing.T) {
	f := newStreamFake()
	addr := timedServer(t, f.deps(), time.Second)
	conn := putHead(t, addr, 1<<20)
	conn.Write([]byte("a few bytes"))
	waitClosed(t, conn, time.Minute)
	if err := <-f.uploads; err == nil {
		t.Fatal("the stalled upload was read as complete")
	}
}

// TestSlowUploadProgresses sends an upload for longer than the read
// timeout, each 64 KiB well within it: it must be accepted whole.
func TestSlowUploadProgresses(t *testing.T) {
	f := newStreamFake()
	const timeout = 2 * time.Second
	addr := timedServer(t, f.deps(), timeout)
	const chunks = 6 // one every timeout/4: the whole takes 1.5 timeouts
	conn := putHead(t, addr, chunks<<16)
	for range chunks {
		if _, err := conn.Write(make([]byte, 64<<10)); err != nil {
			t.Fatalf("the server cut a progressing upload: %v", err)
		}
		time.Sleep(timeout / 4)
	}
	if err := <-f.uploads; err != nil {
		t.Fatalf("a progressing upload was cut: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %v %v", resp, err)
	}
}

// TestStalledDownloadIsCut checks that a download its client stops reading
// is cut once a write has waited for the write timeout.
func TestStalledDownloadIsCut(t *testing.T) {
	f := newStreamFake()
	addr := timedServer(t, f.deps(), time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/sandboxes/%s/files?path=/zeros HTTP/1.1\r\nHost: %s\r\n\r\n", functionstest.DefaultID, addr)
	select {
	case <-f.closed:
	case <-time.After(time.Minute):
		t.Fatal("the download to a client that reads nothing was not cut")
	}
}

// TestLongAnswerIsNotCut checks that an answer computed for longer than
// both the read and the write timeout (a long exec) still arrives, and
// that the request's context was not cancelled meanwhile.
func TestLongAnswerIsNotCut(t *testing.T) {
	const timeout = time.Second
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
		select {
		case <-time.After(3 * timeout):
			return api.ExecResponse{Stdout: "done"}, nil
		case <-ctx.Done():
			return api.ExecResponse{}, ctx.Err()
		}
	}}
	addr := timedServer(t, functionstest.DepsOf(fake), timeout)
	resp, err := http.Post("http://"+addr+"/v1/sandboxes/"+id+"/exec", "application/json", strings.NewReader(`{"argv":["sleep"]}`))
	if err != nil {
		t.Fatalf("long exec: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "done") {
		t.Fatalf("long exec answered %d %s", resp.StatusCode, body)
	}
}
