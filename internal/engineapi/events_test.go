package engineapi

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// chFrame is one frame a channel's reader got.
type chFrame struct {
	binary bool
	data   []byte
}

// readFrames reads a channel to its close and returns its frames and the
// close status.
func readFrames(t *testing.T, url string, ref api.StreamRef) ([]chFrame, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, channelURL(url, ref), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	var out []chFrame
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return out, websocket.CloseStatus(err)
		}
		out = append(out, chFrame{binary: typ == websocket.MessageBinary, data: b})
	}
}

// streamRef calls a streaming function and returns its channel reference.
func streamRef(t *testing.T, wc *wsClient, fn string, data any) api.StreamRef {
	t.Helper()
	var res api.StreamResult
	decodeResult(t, wc.call("s", fn, data), &res)
	if res.Stream.Direction != "read" {
		t.Fatalf("result %+v: want a reader reference", res)
	}
	return res.Stream
}

// TestStreamingFunctionAsChannel: a streaming function of the table over
// the engine is a channel of text event frames, binary data frames, and a
// result frame before a normal close.
func TestStreamingFunctionAsChannel(t *testing.T) {
	f, url := fsServer(t)
	data := bytes.Repeat([]byte("0123456789"), 20000)
	f.files["/f"] = data
	ref := streamRef(t, dial(t, url), api.FnFsDownload, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/f"})
	frames, status := readFrames(t, url, ref)
	if status != websocket.StatusNormalClosure || len(frames) < 3 {
		t.Fatalf("%d frames, close %v", len(frames), status)
	}
	var entry struct {
		Type, Event string
		Data        api.FsEntry
	}
	if err := json.Unmarshal(frames[0].data, &entry); frames[0].binary || err != nil || entry.Type != "event" || entry.Event != "entry" || entry.Data.Size != int64(len(data)) {
		t.Fatalf("first frame %s: want the entry event", frames[0].data)
	}
	var got []byte
	for _, fr := range frames[1 : len(frames)-1] {
		if !fr.binary {
			t.Fatalf("a text frame %s among the data", fr.data)
		}
		got = append(got, fr.data...)
	}
	last := frames[len(frames)-1]
	if !bytes.Equal(got, data) || last.binary || string(last.data) != `{"type":"result","result":{"bytes":200000}}` {
		t.Fatalf("streamed %d of %d bytes; last frame %s", len(got), len(data), last.data)
	}
}

// TestStreamErrorOverChannels: an error before the first event is the
// invocation's; one midway is the last text frame of an event stream, and
// cuts a file's content off (stream_error).
func TestStreamErrorOverChannels(t *testing.T) {
	f, url := fsServer(t)
	f.files["/f"] = []byte("some bytes")
	f.fail = errdefs.New(errdefs.CodeFSIO, "the disk failed")
	wc := dial(t, url)
	m := wc.call("missing", api.FnFsDownload, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/nope"})
	if env := handlerEnvelope(t, m); env["code"] != "S211" {
		t.Fatalf("download of a missing file: %v", env)
	}

	frames, status := readFrames(t, url, streamRef(t, wc, api.FnFsDownload, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/f"}))
	last := frames[len(frames)-1]
	if status != websocket.StatusNormalClosure || last.binary || !strings.Contains(string(last.data), `"type":"error"`) || !strings.Contains(string(last.data), `"code":"S216"`) {
		t.Fatalf("event stream ended with %s, close %v; want an S216 error frame", last.data, status)
	}

	f.files["/big"] = make([]byte, api.FsReadMaxBody+1) // too big for a body: the answer comes before the failure
	var read struct {
		Content *api.StreamRef `json:"content"`
	}
	decodeResult(t, wc.call("r", api.FnFsRead, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/big"}), &read)
	frames, status = readFrames(t, url, *read.Content)
	last = frames[len(frames)-1]
	if status == websocket.StatusNormalClosure || !strings.Contains(string(last.data), `"type":"stream_error"`) {
		t.Fatalf("file stream ended with %s, close %v; want stream_error and an abnormal close", last.data, status)
	}
}

// TestChannelReaderGoneCancels: a reader that goes away mid-stream
// cancels the function's context.
func TestChannelReaderGoneCancels(t *testing.T) {
	f, url := fsServer(t)
	f.files["/f"] = []byte("first")
	f.cancelled = make(chan struct{})
	ref := streamRef(t, dial(t, url), api.FnFsDownload, map[string]any{"sandbox_id": functionstest.DefaultID, "path": "/f"})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, channelURL(url, ref), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	c.CloseNow()
	select {
	case <-f.cancelled:
	case <-time.After(wait):
		t.Fatal("the function's context was not cancelled when its reader went away")
	}
}
