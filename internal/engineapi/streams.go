package engineapi

// Streams over the engine. A streaming function of the table (its
// functions.Stream) is answered with api.StreamResult: the reader reference
// of a channel that hutch fills with the stream's events once the caller
// opens it. A function whose result gives its bytes as a stream
// (Function.GivesBody: sandbox::fs::read) is answered with its result and,
// as content, the reader reference of a channel of those bytes; one that
// takes its content as a stream (Function.TakesBody: sandbox::fs::write)
// takes as content the reader reference of a channel the caller writes the
// body into. Both are the table's functions, as on every transport; no
// file is held whole in memory, nor read twice.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// detached is the context of a stream that outlives its invocation (its
// reader attaches after the answer): the server's lifetime, acting for
// ctx's owner.
func (s *Server) detached(ctx context.Context) context.Context {
	return auth.WithOwner(s.ctx, auth.OwnerFrom(ctx))
}

// callStream runs the streaming function id and answers the reference of
// its channel. An error before the first event is the invocation's.
func (s *Server) callStream(ctx context.Context, id string, data json.RawMessage) (any, error) {
	res, err := s.table.Call(s.detached(ctx), id, data, functions.Params{})
	if err != nil {
		return nil, err
	}
	st, ok := res.(*functions.Stream)
	if !ok {
		return res, nil // a function that streams only when asked to
	}
	var pending []functions.Event
	switch ev, err := st.Next(ctx); {
	case err == nil:
		pending = append(pending, ev)
	case err != io.EOF:
		st.Close()
		return nil, err
	}
	ref, err := s.streamOut(s.detached(ctx), st, pending, false)
	if err != nil {
		return nil, err
	}
	return api.StreamResult{Stream: ref}, nil
}

// callGivingBody runs function id, whose result may give its bytes as a
// stream (sandbox::fs::read): the answer is its result with the reader
// reference of a channel of those bytes as content. When no channel can
// be opened, a result that holds all the bytes itself is answered without
// one.
func (s *Server) callGivingBody(ctx context.Context, id string, data json.RawMessage) (any, error) {
	res, err := s.table.Call(s.detached(ctx), id, data, functions.Params{StreamBody: true})
	c, ok := res.(*functions.Content)
	if err != nil || !ok {
		return res, err
	}
	ref, err := s.streamOut(s.detached(ctx), c.Rest, c.Pending, true)
	if err != nil {
		if c.Whole {
			return c.Result, nil
		}
		return nil, err
	}
	return withContent(c.Result, ref)
}

// withContent is result's JSON object with ref as its field content.
func withContent(result any, ref api.StreamRef) (json.RawMessage, error) {
	obj, err := api.Marshal(result)
	if err != nil {
		return nil, errdefs.New(errdefs.CodeInternal, "encoding a result: %v", err)
	}
	refJSON, err := api.Marshal(ref)
	if err != nil {
		return nil, errdefs.New(errdefs.CodeInternal, "encoding a result: %v", err)
	}
	obj = bytes.TrimRight(obj, " \n")
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return nil, errdefs.New(errdefs.CodeInternal, "the result of a read is not a JSON object")
	}
	out := append([]byte{}, obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"content":`...)
	out = append(out, refJSON...)
	return append(out, '}'), nil
}

// eventFrame and resultFrame are the text frames of an event stream
// (api.StreamResult).
type eventFrame struct {
	Type  string `json:"type"`
	Event string `json:"event"`
	Data  any    `json:"data"`
}

type resultFrame struct {
	Type   string             `json:"type"`
	Result any                `json:"result,omitempty"`
	Error  *api.ErrorEnvelope `json:"error,omitempty"`
}

// streamOut opens a channel of ctx's owner and fills it with st once its
// reader attaches: pending (events already taken from st) first, queued at
// once so that they count against the channel budget rather than wait in
// memory, then the rest of st. With bytesOnly the channel carries only the
// data bytes and an error cuts it off (a file's content); otherwise it
// carries every event and the final value or error (api.StreamResult). It
// closes st when done, or at once when it fails.
func (s *Server) streamOut(ctx context.Context, st *functions.Stream, pending []functions.Event, bytesOnly bool) (api.StreamRef, error) {
	frames := 1
	for _, ev := range pending {
		frames += 1 + len(ev.Bytes)/frameSize
	}
	_, refs, err := s.channels.create(auth.OwnerFrom(ctx), max(frames, defaultChannelFrames))
	if err != nil {
		st.Close()
		return api.StreamRef{}, err
	}
	c, err := s.channels.openRef(refs.Writer)
	if err != nil {
		st.Close()
		return api.StreamRef{}, err
	}
	w := &channelWriter{ctx: ctx, c: c}
	fail := func(err error) (api.StreamRef, error) {
		st.Close()
		w.CloseWithError(err)
		return api.StreamRef{}, err
	}
	for _, ev := range pending {
		if err := sendEvent(w, ev, bytesOnly); err != nil {
			return fail(err)
		}
	}
	if !s.track() {
		return fail(errdefs.ShuttingDown())
	}
	go func() {
		defer s.active.Done()
		defer st.Close()
		select {
		case <-c.readerAttached:
		case <-c.aborted:
			w.CloseWithError(c.abortErr())
			return
		case <-ctx.Done():
			w.CloseWithError(errors.New("hutch is shutting down"))
			return
		}
		// A reader that goes away aborts the channel: that ends the function.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-c.aborted:
				st.Close()
			case <-done:
			}
		}()
		w.CloseWithError(pump(ctx, st, w, bytesOnly))
	}()
	return refs.Reader, nil
}

// pump sends the rest of st into w; the error, when not nil, cuts the
// channel off.
func pump(ctx context.Context, st *functions.Stream, w *channelWriter, bytesOnly bool) error {
	for {
		ev, err := st.Next(ctx)
		switch {
		case err == nil:
			if err := sendEvent(w, ev, bytesOnly); err != nil {
				return err
			}
			continue
		case bytesOnly && err == io.EOF:
			return nil
		case bytesOnly:
			return err
		case err == io.EOF:
			return sendText(w, resultFrame{Type: "result", Result: st.Result()})
		case ctx.Err() != nil:
			return err // the server is shutting down: cut off
		}
		env := envelope.From(err)
		return sendText(w, resultFrame{Type: "error", Error: &env})
	}
}

// sendEvent writes one event: data bytes as binary frames, any other event
// as a text frame (none with bytesOnly).
func sendEvent(w *channelWriter, ev functions.Event, bytesOnly bool) error {
	switch {
	case ev.Type == functions.EventData:
		_, err := w.Write(ev.Bytes)
		return err
	case bytesOnly:
		return nil
	}
	var data any = ev.Data
	if ev.Bytes != nil {
		data = ev.Bytes
	}
	return sendText(w, eventFrame{Type: "event", Event: ev.Type, Data: data})
}

// sendText writes v as one text frame.
func sendText(w *channelWriter, v any) error {
	b, err := api.Marshal(v)
	if err != nil {
		return errdefs.New(errdefs.CodeInternal, "encoding a stream event: %v", err)
	}
	return w.c.put(w.ctx, frame{data: b})
}

// streamedContent reports whether the payload of a function that takes its
// content as a stream (sandbox::fs::write) carries it as a stream
// reference; it returns the reference and the payload without content.
func streamedContent(data json.RawMessage) (api.StreamRef, json.RawMessage, bool, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return api.StreamRef{}, nil, false, nil // the table explains what is wrong
	}
	raw := fields["content"]
	if len(raw) == 0 || raw[0] != '{' {
		return api.StreamRef{}, nil, false, nil
	}
	var ref api.StreamRef
	if err := functions.Decode(raw, &ref); err != nil {
		return api.StreamRef{}, nil, false, errdefs.Malformed("content must be a string or a stream reference {channel_id, access_key, direction}: %v", err)
	}
	if _, ok := fields["content_b64"]; ok {
		return api.StreamRef{}, nil, false, errdefs.Malformed("give exactly one of content and content_b64, not both")
	}
	delete(fields, "content")
	rest, err := json.Marshal(fields)
	return ref, rest, true, err
}

// callWithBody runs function id with its content read from the channel of
// ref, which must be a reader reference (hutch reads the body).
func (s *Server) callWithBody(ctx context.Context, id string, ref api.StreamRef, rest json.RawMessage) (any, error) {
	if ref.Direction != api.StreamRead {
		return nil, errdefs.New(errdefs.CodeFSInvalid, "content must be the reader reference of a channel (direction %q): hutch reads the body from it", api.StreamRead)
	}
	c, err := s.channels.openRef(ref)
	if err != nil {
		return nil, err
	}
	r := &channelReader{ctx: ctx, c: c}
	defer r.Close()
	return s.table.Call(ctx, id, rest, functions.Params{Body: r})
}
