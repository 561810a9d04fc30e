package engineapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// createChannel calls engine::channels::create over wc.
func createChannel(t *testing.T, wc *wsClient) api.ChannelCreateResponse {
	t.Helper()
	m := wc.call("ch", "engine::channels::create", map[string]any{"buffer_size": 4})
	b, _ := json.Marshal(m["result"])
	var resp api.ChannelCreateResponse
	if err := json.Unmarshal(b, &resp); err != nil || resp.Writer.Direction != "write" || resp.Reader.Direction != "read" ||
		resp.Writer.ChannelID != resp.Reader.ChannelID || resp.Writer.AccessKey == resp.Reader.AccessKey {
		t.Fatalf("channel refs = %v (%v)", m, err)
	}
	return resp
}

// channelURL is where a client opens ref, as the SDK builds it.
func channelURL(base string, ref api.StreamRef) string {
	return base + "/ws/channels/" + ref.ChannelID + "?key=" + ref.AccessKey + "&dir=" + ref.Direction
}

func TestChannelRelay(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	refs := createChannel(t, dial(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	data := make([]byte, 3<<20+17)
	rand.Read(data)
	got := make(chan []byte, 1)
	texts := make(chan string, 4)
	go func() {
		// The reader connects first; the writer's frames wait in the buffer.
		c, _, err := websocket.Dial(ctx, channelURL(url, refs.Reader), nil)
		if err != nil {
			got <- nil
			return
		}
		c.SetReadLimit(-1)
		var buf bytes.Buffer
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					buf.Reset()
				}
				got <- buf.Bytes()
				return
			}
			if typ == websocket.MessageText {
				texts <- string(b)
				continue
			}
			buf.Write(b)
		}
	}()
	w, _, err := websocket.Dial(ctx, channelURL(url, refs.Writer), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, websocket.MessageText, []byte(`{"type":"meta"}`)); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 64 << 10 {
		if err := w.Write(ctx, websocket.MessageBinary, data[off:min(off+64<<10, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close(websocket.StatusNormalClosure, "stream_complete")
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("reader got %d bytes, want the %d written", len(b), len(data))
	}
	if txt := <-texts; txt != `{"type":"meta"}` {
		t.Fatalf("text frame = %q", txt)
	}
}

func TestChannelAttachRefusals(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	refs := createChannel(t, dial(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	wrongKey := refs.Reader
	wrongKey.AccessKey = refs.Writer.AccessKey
	unknown := refs.Reader
	unknown.ChannelID = "0b3a6c4e-2f1d-4e8a-9c7b-5d6e7f8a9b0c"
	badDir := refs.Reader
	badDir.Direction = "both"
	for _, tt := range []struct {
		name   string
		ref    api.StreamRef
		status int
	}{
		{"other end's key", wrongKey, http.StatusForbidden},
		{"unknown channel", unknown, http.StatusNotFound},
		{"bad direction", badDir, http.StatusBadRequest},
	} {
		_, resp, err := websocket.Dial(ctx, channelURL(url, tt.ref), nil)
		if err == nil || resp == nil || resp.StatusCode != tt.status {
			t.Errorf("%s: %v (%v), want %d", tt.name, err, resp, tt.status)
		}
	}
	c, _, err := websocket.Dial(ctx, channelURL(url, refs.Reader), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, resp, err := websocket.Dial(ctx, channelURL(url, refs.Reader), nil); err == nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("second reader: %v, want 409", err)
	}
}

// channelServer starts a test server with one channel and returns its
// references and a context bounding the test's waits.
func channelServer(t *testing.T) (*Server, string, api.ChannelCreateResponse, context.Context) {
	t.Helper()
	s, url := testServer(t, &functionstest.Fake{}, Options{})
	_, refs, err := s.channels.create("", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return s, url, refs, ctx
}

// TestChannelAbort checks that a writer that vanishes aborts the stream:
// the reader sees an abnormal close, not a clean end of a short file.
func TestChannelAbort(t *testing.T) {
	s, url, refs, ctx := channelServer(t)
	w, _, err := websocket.Dial(ctx, channelURL(url, refs.Writer), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, websocket.MessageBinary, []byte("partial"))
	w.CloseNow()

	c, err := s.channels.openRef(refs.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := &channelReader{ctx: ctx, c: c}
	_, err = io.ReadAll(r)
	r.Close()
	if !errdefs.Is(err, errdefs.CodeFSStreamAborted) {
		t.Fatalf("read of an aborted stream: %v, want S218", err)
	}
	if _, err := s.channels.openRef(refs.Reader); !errdefs.Is(err, errdefs.CodeFSInvalid) {
		t.Fatalf("reopening a used end: %v, want S210", err)
	}
}

// TestChannelInternalEnds moves bytes between hutch's own ends.
func TestChannelInternalEnds(t *testing.T) {
	cs := newChannels(newBudget(DefaultChannelBufferBytes, DefaultChannelBufferPerOwnerBytes))
	defer cs.closeAll()
	_, refs, err := cs.create("", 2)
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := cs.openRef(refs.Writer)
	rc, _ := cs.openRef(refs.Reader)
	ctx := context.Background()
	data := make([]byte, 1<<20+3)
	rand.Read(data)
	go func() {
		w := &channelWriter{ctx: ctx, c: wc}
		w.Write(data)
		w.CloseWithError(nil)
	}()
	r := &channelReader{ctx: ctx, c: rc}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v; want the %d written", len(got), err, len(data))
	}
	cs.mu.Lock()
	left := len(cs.m)
	cs.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d channels left open after both ends finished", left)
	}
}

func TestChannelLimits(t *testing.T) {
	cs := newChannels(newBudget(DefaultChannelBufferBytes, DefaultChannelBufferPerOwnerBytes))
	defer cs.closeAll()
	if _, _, err := cs.create("", -1); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Fatalf("negative buffer_size: %v, want S001", err)
	}
	for range maxChannels {
		if _, _, err := cs.create("", 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cs.create("", 1); !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Fatalf("channel %d: %v, want S400", maxChannels+1, err)
	}
}

// TestChannelAbortTellsReader cuts off a stream hutch writes to a client:
// the client gets the bytes so far, then a stream_error text frame naming
// S218, then an abnormal close, so a cut-off file never looks whole.
func TestChannelAbortTellsReader(t *testing.T) {
	s, url, refs, ctx := channelServer(t)
	wc, err := s.channels.openRef(refs.Writer)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := websocket.Dial(ctx, channelURL(url, refs.Reader), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.CloseNow()
	w := &channelWriter{ctx: ctx, c: wc}
	if _, err := w.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	if typ, b, err := r.Read(ctx); err != nil || typ != websocket.MessageBinary || string(b) != "partial" {
		t.Fatalf("first frame: %v %q %v", typ, b, err)
	}
	w.CloseWithError(errors.New("the sandbox stopped"))
	typ, b, err := r.Read(ctx)
	var msg struct {
		Type  string            `json:"type"`
		Error api.ErrorEnvelope `json:"error"`
	}
	if err != nil || typ != websocket.MessageText || json.Unmarshal(b, &msg) != nil ||
		msg.Type != "stream_error" || msg.Error.Code != string(errdefs.CodeFSStreamAborted) || !strings.Contains(msg.Error.Message, "the sandbox stopped") {
		t.Fatalf("after the abort: %v %s %v; want a stream_error frame with S218", typ, b, err)
	}
	if _, _, err := r.Read(ctx); websocket.CloseStatus(err) != websocket.StatusInternalError {
		t.Fatalf("close after an abort: %v, want status 1011", err)
	}
}
