package engineapi

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestReadBufferReleased sends one large message and checks that the
// session does not keep a buffer of its size afterwards.
func TestReadBufferReleased(t *testing.T) {
	_, url := testServer(t, &functionstest.Fake{}, Options{})
	wc := dial(t, url)
	const size = 8 << 20
	big := `{"type":"pong","pad":"` + strings.Repeat("x", size) + `"}`
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	wc.sendRaw(websocket.MessageText, []byte(big))
	big = ""
	// The session reads its messages in order: once the ping is answered,
	// the large message has been handled.
	wc.alive()
	if grown := int64(heap()) - int64(before); grown > size/2 {
		t.Fatalf("the heap holds %d bytes more after one %d-byte message", grown, size)
	}
}

// TestSessionsPerOwner checks that one owner's sessions are capped and
// that the cap is per owner.
func TestSessionsPerOwner(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789xx"
	tokens, err := auth.New(map[string]string{"alice": alice, "bob": bob})
	if err != nil {
		t.Fatal(err)
	}
	_, url := testServer(t, &functionstest.Fake{}, Options{Auth: tokens, SessionsPerOwner: 2})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	open := func(token string) (*websocket.Conn, *http.Response, error) {
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if c != nil {
			t.Cleanup(func() { c.CloseNow() })
		}
		return c, resp, err
	}
	for i := range 2 {
		if _, _, err := open(alice); err != nil {
			t.Fatalf("alice's session %d: %v", i+1, err)
		}
	}
	if _, resp, err := open(alice); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("alice's third session: %v (%v), want 429", err, resp)
	}
	if _, _, err := open(bob); err != nil {
		t.Fatalf("bob's first session, beside alice's two: %v", err)
	}
}

// TestChannelBudget fills channels nobody reads: a write past the owner's
// share or the global bound aborts its stream saying which, and a removed
// channel gives its bytes back.
func TestChannelBudget(t *testing.T) {
	const share, total = 4 << 20, 8 << 20
	b := newBudget(total, share)
	cs := newChannels(b)
	defer cs.closeAll()
	ctx := context.Background()
	frame := frame{binary: true, data: make([]byte, 256<<10)}
	// fill writes into a new channel of owner until a write fails.
	fill := func(owner string) (*channel, error) {
		c, _, err := cs.create(owner, maxChannelFrames)
		if err != nil {
			t.Fatal(err)
		}
		for range maxChannelFrames {
			if err := c.put(ctx, frame); err != nil {
				return c, err
			}
		}
		return c, nil
	}
	// bound checks that err aborted the stream naming the config key.
	bound := func(who string, err error, key string) {
		t.Helper()
		if !errdefs.Is(err, errdefs.CodeFSStreamAborted) || !strings.Contains(err.Error(), "("+key+")") {
			t.Fatalf("%s: %v, want S218 naming %s", who, err, key)
		}
	}
	a, err := fill("alice")
	bound("alice past her share", err, "channel_buffer_per_owner_mb")
	_, err = fill("bob")
	bound("bob past his share", err, "channel_buffer_per_owner_mb")
	_, err = fill("carol")
	bound("carol past the global bound", err, "channel_buffer_mb")
	cs.remove(a)
	_, err = fill("carol")
	bound("carol once alice's channel is gone", err, "channel_buffer_per_owner_mb")
	cs.closeAll()
	if used := b.b.Used(); used != 0 {
		t.Fatalf("closed channels still hold %d bytes", used)
	}
}
