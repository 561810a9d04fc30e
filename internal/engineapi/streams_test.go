package engineapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// fsFake is the shared fake manager plus an in-memory file store for the
// calls the engine's streams make (ReadFile, Upload, Download); the other
// filesystem methods are not used here.
type fsFake struct {
	functionstest.Fake
	functions.FS

	mu    sync.Mutex
	files map[string][]byte
	// reads and downloads count the calls of ReadFile and Download.
	reads, downloads int
	// fail, when set, ends every download's reader after the file's bytes.
	fail error
	// cancelled, when set, makes downloads wait after the file's bytes
	// for their context to end, then close it.
	cancelled chan struct{}
}

var _ functions.FS = (*fsFake)(nil)

func (f *fsFake) ReadFile(_ context.Context, r api.FsReadRequest) (api.FsReadResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	b, ok := f.files[r.Path]
	if !ok {
		return api.FsReadResponse{}, errdefs.New(errdefs.CodeFSNotFound, "no such file: %s", r.Path)
	}
	out := api.FsReadResponse{Size: int64(len(b)), Mode: "0644"}
	if len(b) < api.FsReadMaxBody {
		s := string(b)
		out.Body = &s
	}
	return out, nil
}

func (f *fsFake) Upload(_ context.Context, r api.FsUploadRequest, body io.Reader) (api.FsWriteResponse, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return api.FsWriteResponse{}, err
	}
	f.mu.Lock()
	f.files[r.Path] = b
	f.mu.Unlock()
	return api.FsWriteResponse{BytesWritten: int64(len(b)), Path: r.Path}, nil
}

func (f *fsFake) Download(ctx context.Context, r api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.downloads++
	b, ok := f.files[r.Path]
	if !ok {
		return api.FsEntry{}, nil, errdefs.New(errdefs.CodeFSNotFound, "no such file: %s", r.Path)
	}
	var rd io.Reader = bytes.NewReader(b)
	switch {
	case f.fail != nil:
		rd = io.MultiReader(rd, failReader{f.fail})
	case f.cancelled != nil:
		rd = io.MultiReader(rd, ctxReader{ctx, f.cancelled})
	}
	return api.FsEntry{Size: int64(len(b)), Mode: "0644"}, io.NopCloser(rd), nil
}

type failReader struct{ err error }

func (r failReader) Read([]byte) (int, error) { return 0, r.err }

type ctxReader struct {
	ctx    context.Context
	closed chan struct{}
}

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	close(r.closed)
	return 0, r.ctx.Err()
}

func fsServer(t *testing.T) (*fsFake, string) {
	t.Helper()
	f := &fsFake{files: map[string][]byte{}}
	s := New(functions.New(functionstest.DepsOf(f)), Options{})
	_, url := serveHandler(t, s)
	return f, url
}

// readRef reads a whole stream from a reader reference, as the SDK's
// ChannelReader does.
func readRef(t *testing.T, url string, ref api.StreamRef) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, channelURL(url, ref), nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(-1)
	var buf bytes.Buffer
	for {
		_, b, err := c.Read(ctx)
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
			return buf.Bytes(), nil
		}
		if err != nil {
			return buf.Bytes(), err
		}
		buf.Write(b)
	}
}

func decodeResult(t *testing.T, m map[string]any, v any) {
	t.Helper()
	if m["error"] != nil {
		t.Fatalf("call failed: %v", m["error"])
	}
	b, _ := json.Marshal(m["result"])
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestFsReadStream(t *testing.T) {
	f, url := fsServer(t)
	small := []byte("print(1)\n")
	large := make([]byte, api.FsReadMaxBody+12345)
	rand.Read(large)
	f.files["/small.py"], f.files["/large.bin"] = small, large
	wc := dial(t, url)
	for _, tt := range []struct {
		path     string
		data     []byte
		wantBody bool
	}{{"/small.py", small, true}, {"/large.bin", large, false}} {
		var res struct {
			api.FsReadResponse
			Content *api.StreamRef `json:"content"`
		}
		decodeResult(t, wc.call("r"+tt.path, api.FnFsRead, map[string]any{"sandbox_id": functionstest.DefaultID, "path": tt.path}), &res)
		if (res.Body != nil) != tt.wantBody || res.Size != int64(len(tt.data)) || res.Content == nil || res.Content.Direction != "read" {
			t.Fatalf("%s: result %+v", tt.path, res)
		}
		got, err := readRef(t, url, *res.Content)
		if err != nil || !bytes.Equal(got, tt.data) {
			t.Fatalf("%s: streamed %d bytes (%v), want %d", tt.path, len(got), err, len(tt.data))
		}
	}
	m := wc.call("missing", api.FnFsRead, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/nope"})
	if env := handlerEnvelope(t, m); env["code"] != "S211" {
		t.Fatalf("read of a missing file: %v", env)
	}
	if f.reads != 0 || f.downloads != 3 {
		t.Fatalf("three reads made %d ReadFile and %d Download calls, want one download each", f.reads, f.downloads)
	}
}

func TestFsWriteStream(t *testing.T) {
	f, url := fsServer(t)
	wc := dial(t, url)
	refs := createChannel(t, wc)
	data := make([]byte, 2<<20+5)
	rand.Read(data)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	go func() {
		w, _, err := websocket.Dial(ctx, channelURL(url, refs.Writer), nil)
		if err != nil {
			return
		}
		for off := 0; off < len(data); off += 64 << 10 {
			w.Write(ctx, websocket.MessageBinary, data[off:min(off+64<<10, len(data))])
		}
		w.Close(websocket.StatusNormalClosure, "stream_complete")
	}()
	var res api.FsWriteResponse
	decodeResult(t, wc.call("w", api.FnFsWrite, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/up.bin", "content": refs.Reader}), &res)
	if res.BytesWritten != int64(len(data)) || !bytes.Equal(f.files["/up.bin"], data) {
		t.Fatalf("wrote %d bytes, want %d", res.BytesWritten, len(data))
	}
	bad := createChannel(t, wc)
	for _, tt := range []struct {
		name    string
		payload map[string]any
		code    string
	}{
		{"writer reference", map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/x", "content": bad.Writer}, "S210"},
		{"both bodies", map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/x", "content": bad.Reader, "content_b64": ""}, "S001"},
		{"not a reference", map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/x", "content": map[string]any{"channel": 1}}, "S001"},
		{"wrong key", map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/x", "content": api.StreamRef{ChannelID: bad.Reader.ChannelID, AccessKey: "x", Direction: "read"}}, "S210"},
	} {
		if env := handlerEnvelope(t, wc.call(tt.name, api.FnFsWrite, tt.payload)); env["code"] != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, env, tt.code)
		}
	}
}

// TestFsWriteStreamAborted cuts the writer off midway: the write fails with
// S218 and nothing is stored.
func TestFsWriteStreamAborted(t *testing.T) {
	f, url := fsServer(t)
	wc := dial(t, url)
	refs := createChannel(t, wc)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	w, _, err := websocket.Dial(ctx, channelURL(url, refs.Writer), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, websocket.MessageBinary, []byte("half a file"))
	wc.invoke("w", api.FnFsWrite, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/cut.bin", "content": refs.Reader})
	w.CloseNow()
	m := wc.recv()
	if env := handlerEnvelope(t, m); env["code"] != "S218" || env["retryable"] != true {
		t.Fatalf("aborted write: %v, want S218 retryable", env)
	}
	if _, ok := f.files["/cut.bin"]; ok {
		t.Fatal("an aborted upload stored a file")
	}
}

// TestFsReadSameOverEveryTransport: sandbox::fs::read is one function of
// the table: REST's answer is the engine's without the content channel,
// and both read the file through the one download (no second way in).
func TestFsReadSameOverEveryTransport(t *testing.T) {
	f, url := fsServer(t)
	f.files["/a.txt"] = []byte("same bytes\n")
	f.files["/b.bin"] = []byte{0xff, 0xfe, 0}
	hs := httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(f)), httpapi.Options{}))
	t.Cleanup(hs.Close)
	wc := dial(t, url)
	for _, p := range []string{"/a.txt", "/b.bin"} {
		payload := map[string]any{"sandbox_id": functionstest.DefaultID, "path": p}
		var overEngine map[string]any
		decodeResult(t, wc.call("r"+p, api.FnFsRead, payload), &overEngine)
		if _, ok := overEngine["content"]; !ok {
			t.Fatalf("%s over the engine: %v, no content channel", p, overEngine)
		}
		delete(overEngine, "content")
		body, _ := json.Marshal(payload)
		resp, err := http.Post(hs.URL+"/v1/functions/"+api.FnFsRead, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var overREST map[string]any
		err = json.NewDecoder(resp.Body).Decode(&overREST)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s over REST: %d %v", p, resp.StatusCode, err)
		}
		if !reflect.DeepEqual(overREST, overEngine) {
			t.Errorf("%s: REST answers %v, the engine %v", p, overREST, overEngine)
		}
	}
	if f.reads != 0 || f.downloads != 4 {
		t.Fatalf("four reads made %d ReadFile and %d Download calls, want one download each", f.reads, f.downloads)
	}
}
