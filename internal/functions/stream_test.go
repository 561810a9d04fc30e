package functions

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// wait bounds every wait of these tests; none asserts a duration.
const wait = 30 * time.Second

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func TestStreamEventsThenResult(t *testing.T) {
	ctx := waitCtx(t)
	var observed []error
	st := NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
		for i := range 3 {
			if err := emit.Emit(Event{Type: "n", Data: i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	}, func(err error) { observed = append(observed, err) })
	defer st.Close()
	for i := range 3 {
		ev, err := st.Next(ctx)
		if err != nil || ev.Type != "n" || ev.Data != i {
			t.Fatalf("event %d = %+v, %v", i, ev, err)
		}
	}
	if _, err := st.Next(ctx); err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	if st.Result() != "done" {
		t.Fatalf("result = %v", st.Result())
	}
	if _, err := st.Next(ctx); err != io.EOF {
		t.Fatalf("Next after the end = %v, want io.EOF again", err)
	}
	if len(observed) != 1 || observed[0] != nil {
		t.Fatalf("observed %v, want one success", observed)
	}
}

func TestStreamErrorMidway(t *testing.T) {
	ctx := waitCtx(t)
	boom := errdefs.New(errdefs.CodeFSIO, "disk on fire")
	st := NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
		if err := emit.Emit(Event{Type: EventData, Bytes: []byte("a")}); err != nil {
			return nil, err
		}
		return nil, boom
	}, nil)
	defer st.Close()
	if ev, err := st.Next(ctx); err != nil || string(ev.Bytes) != "a" {
		t.Fatalf("first = %+v, %v", ev, err)
	}
	if _, err := st.Next(ctx); !errors.Is(err, boom) {
		t.Fatalf("second = %v, want the function's error", err)
	}
}

// TestStreamBoundedAndCancelled: a producer never runs more than the
// queue ahead of a consumer that does not read, and Close cancels it.
func TestStreamBoundedAndCancelled(t *testing.T) {
	ctx := waitCtx(t)
	var emitted atomic.Int64
	ended := make(chan error, 1)
	st := NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
		for {
			if err := emit.Emit(Event{Type: "tick"}); err != nil {
				return nil, err
			}
			emitted.Add(1)
		}
	}, func(err error) { ended <- err })
	if _, err := st.Next(ctx); err != nil {
		t.Fatal(err)
	}
	// The producer runs ahead until the queue is full, and no further.
	testutil.Eventually(t, 30*time.Second, func() bool { return emitted.Load() >= 1+streamQueue }, "the producer fills the queue")
	if n, queued := emitted.Load(), len(st.events); n != 1+streamQueue || queued != streamQueue {
		t.Fatalf("producer emitted %d events with one taken, %d queued: the queue is not bounded", n, queued)
	}
	st.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("producer ended with %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not stop the producer")
	}
}

func TestStreamCallerContextCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(waitCtx(t))
	ended := make(chan error, 1)
	st := NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, func(err error) { ended <- err })
	defer st.Close()
	cancel()
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatal("the caller's context did not reach the producer")
	}
}

func TestStreamPanicIsAnError(t *testing.T) {
	ctx := waitCtx(t)
	st := NewStream(ctx, func(context.Context, Emitter) (any, error) { panic("oops") }, nil)
	defer st.Close()
	if _, err := st.Next(ctx); !errdefs.Is(err, errdefs.CodeInternal) {
		t.Fatalf("err = %v, want internal", err)
	}
}

// filesFake serves one file for download through FS; the other methods
// are not used.
type filesFake struct {
	FS
	data []byte
	// err, when set, ends the file's reader after data.
	err error
	req api.FsDownloadRequest
}

func (f *filesFake) Download(_ context.Context, r api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	f.req = r
	if r.Path == "/missing" {
		return api.FsEntry{}, nil, errdefs.New(errdefs.CodeFSNotFound, "no such file: %s", r.Path)
	}
	var rd io.Reader = strings.NewReader(string(f.data))
	if f.err != nil {
		rd = io.MultiReader(rd, errReader{f.err})
	}
	return api.FsEntry{Name: "f", Size: int64(len(f.data)), Mode: "0644"}, io.NopCloser(rd), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestDownloadIsAStreamingFunction(t *testing.T) {
	ctx := waitCtx(t)
	data := strings.Repeat("x", 3*downloadChunk+5)
	f := &filesFake{data: []byte(data)}
	tab := New(Deps{Sandboxes: &fakeSandboxes{}, Files: f})
	if fn, ok := tab.Lookup(api.FnFsDownload); !ok || !fn.Streams {
		t.Fatalf("%s is not a streaming function of the table", api.FnFsDownload)
	}
	res, err := tab.Call(ctx, api.FnFsDownload, json.RawMessage(`{"path":"/f"}`), Params{SandboxID: "sb"})
	if err != nil {
		t.Fatal(err)
	}
	st := res.(*Stream)
	defer st.Close()
	ev, err := st.Expect(ctx, EventEntry)
	if err != nil || ev.Data.(api.FsEntry).Size != int64(len(data)) {
		t.Fatalf("entry = %+v, %v", ev, err)
	}
	var got []byte
	for {
		ev, err := st.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Bytes) > downloadChunk {
			t.Fatalf("a data event of %d bytes", len(ev.Bytes))
		}
		got = append(got, ev.Bytes...)
	}
	if string(got) != data || st.Result().(api.FsDownloadResponse).Bytes != int64(len(data)) {
		t.Fatalf("streamed %d bytes, result %+v", len(got), st.Result())
	}
	if f.req.SandboxID != "sb" {
		t.Fatalf("sandbox_id from Params did not reach the request: %+v", f.req)
	}
}

func TestReadResponse(t *testing.T) {
	e := api.FsEntry{Size: 0, Mode: "0644", Mtime: 7}
	if r := ReadResponse(e, []byte("hi"), true); r.Body == nil || *r.Body != "hi" || r.Size != 2 || r.ContentB64 != nil {
		t.Errorf("text file: %+v", r)
	}
	if r := ReadResponse(e, []byte{0xff}, true); r.ContentB64 == nil || *r.ContentB64 != "/w==" || r.Body != nil {
		t.Errorf("binary file: %+v", r)
	}
	if r := ReadResponse(api.FsEntry{Size: 9 << 20}, []byte("part"), false); r.Body != nil || r.ContentB64 != nil || r.Size != 9<<20 {
		t.Errorf("partial head: %+v", r)
	}
	big := make([]byte, api.FsReadMaxBody)
	if r := ReadResponse(e, big, true); r.Body != nil || r.ContentB64 != nil {
		t.Errorf("a whole file of FsReadMaxBody bytes has a body")
	}
}
