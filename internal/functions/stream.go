package functions

// The streaming kind of function: instead of one value, a function sends a
// sequence of events and then ends with a final value or an error. The
// function runs in its own goroutine and hands each event over a queue of
// streamQueue events, so a producer never runs more than that ahead of its
// consumer: a slow consumer slows the producer down, and one that goes
// away (Close, or the context of the call ending) cancels it.

import (
	"context"
	"io"
	"sync"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// streamQueue is how many events a stream holds that its consumer has not
// taken yet. One keeps the producer and the consumer working at the same
// time while holding at most two events (this one and the one being made).
const streamQueue = 1

// Event names shared by the streams of the table.
const (
	// EventEntry carries an api.FsEntry: the file a download streams.
	EventEntry = "entry"
	// EventData carries Bytes: the stream's body (a file's content).
	EventData = "data"
)

// Event is one item of a stream. Data is a JSON value; Bytes, when set,
// carries raw bytes that a transport sends as binary where it can (engine
// channel frames, an HTTP body) and as base64 where it cannot (SSE,
// NDJSON). Bytes are the consumer's once the event is taken.
type Event struct {
	Type  string
	Data  any
	Bytes []byte
	// ID, when set, lets a client resume after the event (SSE's id and
	// Last-Event-ID).
	ID string
}

// Emitter is how a streaming function sends its events.
type Emitter struct {
	ctx    context.Context
	events chan<- Event
}

// Emit sends ev, waiting while the consumer has streamQueue events
// untaken. It fails once the stream's context ends (the consumer went
// away): the function should then return.
func (e Emitter) Emit(ev Event) error {
	select {
	case e.events <- ev:
		return nil
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

// Stream is the result of a streaming function. The consumer calls Next
// until it returns an error (io.EOF at a normal end, then Result is the
// final value) and must call Close, which cancels a producer still
// running. Next and Result are for one goroutine; Close for any.
type Stream struct {
	events chan Event
	cancel context.CancelFunc
	// result and err are set before events is closed.
	result any
	err    error
	close  sync.Once
}

// NewStream runs fn in its own goroutine on a context derived from ctx
// and returns the stream of its events. done, when not nil, is told the
// function's error once it returns (the table's observer).
func NewStream(ctx context.Context, fn func(ctx context.Context, emit Emitter) (any, error), done func(error)) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{events: make(chan Event, streamQueue), cancel: cancel}
	go func() {
		defer close(s.events)
		defer func() {
			if v := recover(); v != nil {
				s.result, s.err = nil, errdefs.New(errdefs.CodeInternal, "internal error: %v", v)
			}
			if done != nil {
				done(s.err)
			}
		}()
		s.result, s.err = fn(ctx, Emitter{ctx: ctx, events: s.events})
		if s.err == nil && ctx.Err() != nil {
			s.err = ctx.Err() // cut off, even if fn did not notice
		}
	}()
	return s
}

// Next returns the next event; io.EOF once the function has returned its
// final value; the function's error when it failed; ctx's error when ctx
// ends first.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-s.events:
		if ok {
			return ev, nil
		}
		if s.err != nil {
			return Event{}, s.err
		}
		return Event{}, io.EOF
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Result is the final value, once Next has returned io.EOF.
func (s *Stream) Result() any { return s.result }

// Close cancels the function if it still runs (a blocked Emit returns);
// it is idempotent.
func (s *Stream) Close() { s.close.Do(s.cancel) }

// Expect returns the next event of s, which must be of type typ; io.EOF
// (an early end) is an internal error.
func (s *Stream) Expect(ctx context.Context, typ string) (Event, error) {
	ev, err := s.Next(ctx)
	switch {
	case err == io.EOF:
		return ev, errdefs.New(errdefs.CodeInternal, "the stream ended without a %s event", typ)
	case err != nil:
		return ev, err
	case ev.Type != typ:
		return ev, errdefs.New(errdefs.CodeInternal, "stream sent a %s event where a %s event belongs", ev.Type, typ)
	}
	return ev, nil
}
