package engineapi

// Stream channels: engine::channels::create returns a writer and a reader
// reference of one in-memory channel; each end is attached once, either by
// a client over /ws/channels/{id} or by hutch itself (the body of a large
// sandbox::fs::read or sandbox::fs::write). Frames flow through a bounded
// queue, so a fast writer waits for a slow reader; the bytes written and not
// yet read count against a budget, in all and per owner (budget.go), so
// that many channels nobody reads cannot hold more memory than it allows.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Channel bounds.
const (
	// frameSize is the size of the binary frames hutch sends (as the SDK).
	frameSize = 64 << 10
	// maxFrameBytes limits one frame a client writes into a channel.
	maxFrameBytes = 1 << 20
	// defaultChannelFrames and maxChannelFrames bound buffer_size.
	defaultChannelFrames = 16
	maxChannelFrames     = 64
	// maxChannels limits the channels open at once (every engine
	// sandbox::fs::read opens one, which expires unused after
	// channelAttachTTL).
	maxChannels = 4096
	// channelAttachTTL is how long a channel waits for both ends.
	channelAttachTTL = 60 * time.Second
)

// frame is one message through a channel.
type frame struct {
	binary bool
	data   []byte
}

// channel is one stream.
type channel struct {
	id                string
	owner             string
	budget            *channelBudget
	readKey, writeKey string
	frames            chan frame
	// aborted is closed when the stream is cut off; err says why.
	aborted chan struct{}
	// readerAttached is closed when the read end is attached.
	readerAttached chan struct{}
	expiry         *time.Timer

	mu sync.Mutex
	// The fields below are guarded by mu.
	err            error
	writeClosed    bool
	attachedR      bool
	attachedW      bool
	releasedR      bool
	releasedW      bool
	onBothReleased func()
	// held is what the channel has taken from the budget: the bytes of
	// the frames written and not yet read. Once the channel is removed
	// (gone), it holds nothing.
	held int64
	gone bool
}

// put sends one frame, waiting while the buffer is full. A frame past the
// budget aborts the stream.
func (c *channel) put(ctx context.Context, f frame) error {
	n := int64(len(f.data))
	if err := c.hold(n); err != nil {
		c.abort(err)
		return c.abortErr()
	}
	select {
	case c.frames <- f:
		return nil
	case <-c.aborted:
		c.unhold(n)
		return c.abortErr()
	case <-ctx.Done():
		c.unhold(n)
		return ctx.Err()
	}
}

// hold takes n bytes from the budget for a frame about to be queued.
func (c *channel) hold(n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return errors.New("the channel is closed")
	}
	if err := c.budget.take(c.owner, n); err != nil {
		return err
	}
	c.held += n
	return nil
}

// unhold gives back the n bytes of a frame read or never queued.
func (c *channel) unhold(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gone {
		c.held -= n
		c.budget.give(c.owner, n)
	}
}

// drop gives back all the channel holds, for good.
func (c *channel) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = true
	c.budget.give(c.owner, c.held)
	c.held = 0
}

// closeWrite ends the stream normally; the reader gets io.EOF after the
// frames already sent. Only the write end calls it, after its last put.
func (c *channel) closeWrite() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.writeClosed {
		c.writeClosed = true
		close(c.frames)
	}
}

// next returns the next frame, io.EOF at the normal end, or the abort error.
func (c *channel) next(ctx context.Context) (frame, error) {
	select {
	case f, ok := <-c.frames:
		if !ok {
			return frame{}, io.EOF
		}
		c.unhold(int64(len(f.data)))
		return f, nil
	case <-c.aborted:
		return frame{}, c.abortErr()
	case <-ctx.Done():
		return frame{}, ctx.Err()
	}
}

// abort cuts the stream off with err (S218); the first reason wins.
func (c *channel) abort(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = errdefs.New(errdefs.CodeFSStreamAborted, "stream %s aborted: %v", c.id, err)
	close(c.aborted)
}

func (c *channel) abortErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// release marks one end done; the channel is forgotten once both are.
func (c *channel) release(dir string) {
	c.mu.Lock()
	if dir == api.StreamRead {
		c.releasedR = true
	} else {
		c.releasedW = true
	}
	done := c.releasedR && c.releasedW
	c.mu.Unlock()
	if done {
		c.onBothReleased()
	}
}

// channels is the registry of open channels.
type channels struct {
	budget *channelBudget

	mu sync.Mutex
	// The fields below are guarded by mu.
	m      map[string]*channel
	closed bool
}

func newChannels(b *channelBudget) *channels { return &channels{budget: b, m: map[string]*channel{}} }

func newKey() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// create opens a channel of owner's holding up to frames frames (0: the
// default).
func (cs *channels) create(owner string, frames int) (*channel, api.ChannelCreateResponse, error) {
	switch {
	case frames < 0:
		return nil, api.ChannelCreateResponse{}, errdefs.Malformed("buffer_size must not be negative, got %d", frames)
	case frames == 0:
		frames = defaultChannelFrames
	}
	frames = min(frames, maxChannelFrames)
	c := &channel{
		id:             uuid.NewString(),
		owner:          owner,
		budget:         cs.budget,
		readKey:        newKey(),
		writeKey:       newKey(),
		frames:         make(chan frame, frames),
		aborted:        make(chan struct{}),
		readerAttached: make(chan struct{}),
	}
	c.onBothReleased = func() { cs.remove(c) }
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, api.ChannelCreateResponse{}, errdefs.ShuttingDown()
	}
	if len(cs.m) >= maxChannels {
		return nil, api.ChannelCreateResponse{}, errdefs.New(errdefs.CodeCapacity, "%d stream channels are open (the limit)", maxChannels).
			WithFix(nil, "finish or abandon open streams; an unused channel expires after a minute")
	}
	cs.m[c.id] = c
	c.expiry = time.AfterFunc(channelAttachTTL, func() { cs.expire(c) })
	return c, api.ChannelCreateResponse{
		Writer: api.StreamRef{ChannelID: c.id, AccessKey: c.writeKey, Direction: api.StreamWrite},
		Reader: api.StreamRef{ChannelID: c.id, AccessKey: c.readKey, Direction: api.StreamRead},
	}, nil
}

// expire aborts a channel whose ends were not both attached in time.
func (cs *channels) expire(c *channel) {
	c.mu.Lock()
	both := c.attachedR && c.attachedW
	c.mu.Unlock()
	if both {
		return
	}
	c.abort(fmt.Errorf("not opened within %s", channelAttachTTL))
	cs.remove(c)
}

// remove forgets c and gives back what it holds of the budget.
func (cs *channels) remove(c *channel) {
	c.expiry.Stop()
	c.drop()
	cs.mu.Lock()
	delete(cs.m, c.id)
	cs.mu.Unlock()
}

// closeAll aborts every channel and refuses new ones.
func (cs *channels) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	all := make([]*channel, 0, len(cs.m))
	for _, c := range cs.m {
		all = append(all, c)
	}
	cs.mu.Unlock()
	for _, c := range all {
		c.abort(errors.New("hutch is shutting down"))
		cs.remove(c)
	}
}

// errAttach is a refused attachment, with the HTTP status of the refusal.
type errAttach struct {
	status int
	msg    string
}

func (e *errAttach) Error() string { return e.msg }

// attach claims one end of channel id with its access key.
func (cs *channels) attach(id, key, dir string) (*channel, error) {
	if dir != api.StreamRead && dir != api.StreamWrite {
		return nil, &errAttach{http.StatusBadRequest, fmt.Sprintf("dir must be read or write, not %q", clip(dir, 16))}
	}
	cs.mu.Lock()
	c, ok := cs.m[id]
	cs.mu.Unlock()
	if !ok {
		return nil, &errAttach{http.StatusNotFound, fmt.Sprintf("no open channel %s", clip(id, 64))}
	}
	want := c.writeKey
	if dir == api.StreamRead {
		want = c.readKey
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(want)) != 1 {
		return nil, &errAttach{http.StatusForbidden, "wrong access key for this end of the channel"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	attached := &c.attachedW
	if dir == api.StreamRead {
		attached = &c.attachedR
	}
	if *attached {
		return nil, &errAttach{http.StatusConflict, "this end of the channel is already open"}
	}
	*attached = true
	if dir == api.StreamRead {
		close(c.readerAttached)
	}
	return c, nil
}

// openRef attaches hutch itself to the end of a channel a caller passed.
func (cs *channels) openRef(ref api.StreamRef) (*channel, error) {
	c, err := cs.attach(ref.ChannelID, ref.AccessKey, ref.Direction)
	if err != nil {
		return nil, errdefs.New(errdefs.CodeFSInvalid, "stream reference: %v", err)
	}
	return c, nil
}

// serveChannel connects a client to one end of a channel.
func (s *Server) serveChannel(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dir := q.Get("dir")
	c, err := s.channels.attach(r.PathValue("id"), q.Get("key"), dir)
	if err != nil {
		var ea *errAttach
		errors.As(err, &ea)
		http.Error(w, ea.msg, ea.status)
		return
	}
	defer c.release(dir)
	conn := s.accept(w, r)
	if conn == nil {
		c.abort(errors.New("the client's WebSocket upgrade failed"))
		return
	}
	defer s.active.Done()
	stop := context.AfterFunc(s.ctx, func() { conn.Close(websocket.StatusGoingAway, "hutch is shutting down") })
	defer stop()
	if dir == api.StreamWrite {
		s.pumpFromClient(conn, c)
	} else {
		s.pumpToClient(conn, c)
	}
}

// pumpFromClient moves a client's frames into the channel until it closes.
func (s *Server) pumpFromClient(conn *websocket.Conn, c *channel) {
	conn.SetReadLimit(maxFrameBytes)
	for {
		typ, data, err := conn.Read(context.Background())
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusGoingAway:
				c.closeWrite()
			default:
				c.abort(fmt.Errorf("the writer went away: %v", err))
			}
			conn.CloseNow()
			return
		}
		if err := c.put(s.ctx, frame{binary: typ == websocket.MessageBinary, data: data}); err != nil {
			conn.Close(websocket.StatusPolicyViolation, clip(err.Error(), 100))
			return
		}
	}
}

// pumpToClient sends the channel's frames to a client, then closes.
func (s *Server) pumpToClient(conn *websocket.Conn, c *channel) {
	// The client sends nothing; reading answers its control frames and
	// tells when it goes away.
	ctx := conn.CloseRead(s.ctx)
	for {
		f, err := c.next(ctx)
		switch {
		case err == io.EOF:
			conn.Close(websocket.StatusNormalClosure, "stream_complete")
			return
		case err != nil:
			if ctx.Err() == nil {
				// The writer's end failed: say so in a text frame first,
				// since a reader may not look at the close status (the
				// iii-sdk's ChannelReader ends its stream on any close).
				sendStreamError(s.ctx, conn, err, s.opts.WriteTimeout)
			}
			c.abort(errors.New("the reader went away"))
			conn.Close(websocket.StatusInternalError, "stream aborted")
			return
		}
		typ := websocket.MessageText
		if f.binary {
			typ = websocket.MessageBinary
		}
		wctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
		err = conn.Write(wctx, typ, f.data)
		cancel()
		if err != nil {
			c.abort(errors.New("the reader went away"))
			return
		}
	}
}

// streamError is the text frame a reader gets before a stream that was
// cut off closes: {"type":"stream_error","error":{envelope}}.
type streamError struct {
	Type  string            `json:"type"`
	Error api.ErrorEnvelope `json:"error"`
}

// sendStreamError tells a channel's reader why its stream ends early.
func sendStreamError(ctx context.Context, conn *websocket.Conn, err error, timeout time.Duration) {
	b, _ := json.Marshal(streamError{Type: "stream_error", Error: envelope.From(err)})
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_ = conn.Write(wctx, websocket.MessageText, b)
}

// channelReader is hutch's own read end: the binary frames as a byte stream
// (text frames, control messages, are skipped).
type channelReader struct {
	ctx  context.Context
	c    *channel
	rest []byte
	eof  bool
}

func (r *channelReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		f, err := r.c.next(r.ctx)
		if err == io.EOF {
			r.eof = true
			continue
		}
		if err != nil {
			return 0, err
		}
		if f.binary {
			r.rest = f.data
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// Close releases the read end, aborting the stream unless it was read to
// its end.
func (r *channelReader) Close() error {
	if !r.eof {
		r.c.abort(errors.New("the reader stopped"))
	}
	r.c.release(api.StreamRead)
	return nil
}

// channelWriter is hutch's own write end: bytes become binary frames.
type channelWriter struct {
	ctx context.Context
	c   *channel
}

func (w *channelWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), frameSize)
		if err := w.c.put(w.ctx, frame{binary: true, data: append([]byte(nil), p[:k]...)}); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// CloseWithError ends the stream: normally when err is nil, else aborted.
func (w *channelWriter) CloseWithError(err error) error {
	if err != nil {
		w.c.abort(err)
	} else {
		w.c.closeWrite()
	}
	w.c.release(api.StreamWrite)
	return nil
}
