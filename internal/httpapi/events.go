package httpapi

// The REST rendering of a streaming function's events. With Accept:
// text/event-stream they are Server-Sent Events,
//
//	[id: <id>]
//	event: <type>            event: result           event: error
//	data: <data>             data: <final value>     data: {"error": <envelope>}
//
// and otherwise NDJSON (application/x-ndjson), one object a line:
//
//	{"type":"<type>","data":<data>}
//	{"type":"result","result":<final value>}
//	{"type":"error","error":<envelope>}
//
// where <data> is the event's JSON value, or its bytes in base64. With
// Accept: application/x-hutch-frames (issue 46: 5) the lines are NDJSON's,
// but an event that carries bytes (a file's data, a process's output
// chunk) sends them raw after its line, which says how many:
//
//	{"type":"data","bytes":<n>}\n<n bytes>
//	{"type":"stdout","data":{"offset":<o>[,"dropped":<d>]},"bytes":<n>}\n<n bytes>
//
// so that output moves without a JSON string or base64 around each chunk.
// A stream
// ends with exactly one result or error; one that stops without either was
// cut off. Each event is flushed as it comes, under the write timeout
// (progressWriter), so a client that stops reading is disconnected and the
// function's context cancelled; nothing queues beyond the stream's own
// bound. An error before the first event is an ordinary error answer.

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Media types of a stream's answer.
const (
	sseType    = "text/event-stream"
	ndjsonType = "application/x-ndjson"
	// framesType is NDJSON with raw bytes after the lines that say so.
	framesType = "application/x-hutch-frames"
)

// eventStream is the answer of a streaming function.
type eventStream struct {
	s   *server
	ctx context.Context
	st  *functions.Stream
	sse bool
	// framed sends events' bytes raw (framesType).
	framed bool
}

// events renders st for r: frames or SSE when r accepts them, else NDJSON.
func (s *server) events(r *http.Request, st *functions.Stream) *eventStream {
	accept := r.Header.Get("Accept")
	framed := strings.Contains(accept, framesType)
	return &eventStream{s: s, ctx: r.Context(), st: st, framed: framed, sse: !framed && strings.Contains(accept, sseType)}
}

func (e *eventStream) stream(w http.ResponseWriter, body io.Writer) int {
	defer e.st.Close()
	ev, err := e.st.Next(e.ctx)
	e.s.answering(w)
	if err != nil && err != io.EOF {
		return e.s.writeError(w, err)
	}
	h := w.Header()
	switch {
	case e.sse:
		h.Set("Content-Type", sseType)
	case e.framed:
		h.Set("Content-Type", framesType)
	default:
		h.Set("Content-Type", ndjsonType)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := getBuffer()
	defer putBuffer(buf)
	for {
		buf.Reset()
		var tail frameTail
		switch {
		case err == io.EOF:
			e.encode(buf, "result", e.st.Result())
		case err != nil:
			e.encodeError(buf, err)
		case e.framed && e.frame(buf, ev, &tail):
		default:
			var data any = ev.Data
			if ev.Bytes != nil {
				data = ev.Bytes
			}
			if e.sse && ev.ID != "" {
				buf.WriteString("id: ")
				buf.WriteString(ev.ID)
				buf.WriteString("\n")
			}
			e.encode(buf, ev.Type, data)
		}
		_, werr := body.Write(buf.Bytes())
		if werr == nil {
			werr = tail.write(body)
		}
		if werr != nil || rc.Flush() != nil {
			e.s.log.Debug("event stream cut off", "err", werr)
			panic(http.ErrAbortHandler)
		}
		if err != nil {
			return http.StatusOK
		}
		ev, err = e.st.Next(e.ctx)
	}
}

// encodeError writes the error that ends a stream.
func (e *eventStream) encodeError(buf *bytes.Buffer, err error) {
	env := envelope.From(err)
	if e.sse {
		e.encodeRaw(buf, "error", mustMarshal(errorBody{Error: &env}))
		return
	}
	e.encodeRaw(buf, "error", mustMarshal(env))
}

// encode writes one event of type typ: its value v is the data of an
// event or the final value of "result".
func (e *eventStream) encode(buf *bytes.Buffer, typ string, v any) {
	raw, err := api.Marshal(v)
	if err != nil {
		e.encodeError(buf, err)
		return
	}
	e.encodeRaw(buf, typ, raw)
}

// encodeRaw writes one event of type typ whose value is raw.
func (e *eventStream) encodeRaw(buf *bytes.Buffer, typ string, raw []byte) {
	if e.sse {
		buf.WriteString("event: ")
		buf.WriteString(typ)
		buf.WriteString("\ndata: ")
		buf.Write(raw)
		buf.WriteString("\n\n")
		return
	}
	field := "data"
	if typ == "result" || typ == "error" {
		field = typ
	}
	writeLine(buf, typ, field, raw, -1)
}

// writeLine writes one NDJSON line {"type":typ,field:raw}, with
// "bytes":n when n is not negative. raw is api.Marshal's compact JSON and
// goes in as it is: a second encoder scanned a 1 MiB chunk once more.
func writeLine(buf *bytes.Buffer, typ, field string, raw []byte, n int) {
	buf.WriteString(`{"type":`)
	buf.Write(mustMarshal(typ))
	if raw != nil {
		buf.WriteString(`,"`)
		buf.WriteString(field)
		buf.WriteString(`":`)
		buf.Write(raw)
	}
	if n >= 0 {
		buf.WriteString(`,"bytes":`)
		buf.WriteString(strconv.Itoa(n))
	}
	buf.WriteString("}\n")
}

// frameTail is the bytes after a line of the framed form: b, or the
// text s (an output chunk's, written without a copy).
type frameTail struct {
	b []byte
	s string
}

func (t frameTail) write(w io.Writer) error {
	var err error
	switch {
	case t.b != nil:
		_, err = w.Write(t.b)
	case t.s != "":
		// As bytes, not io.WriteString: net/http's response takes a
		// string through its 2 KiB buffer, a write to the socket every
		// 4 KiB (a third of the daemon's CPU in a streamed exec), where a
		// large []byte goes to the socket as it is. The writer only reads
		// it.
		_, err = w.Write(unsafe.Slice(unsafe.StringData(t.s), len(t.s)))
	}
	return err
}

// frame writes ev's line in the framed form into buf and sets *tail to
// the bytes that follow it, when ev carries bytes: its Bytes, or an
// output chunk's data (decoded when it came in base64). It reports
// whether it did; other events are written as NDJSON.
func (e *eventStream) frame(buf *bytes.Buffer, ev functions.Event, tail *frameTail) bool {
	if ev.Bytes != nil {
		writeLine(buf, ev.Type, "", nil, len(ev.Bytes))
		tail.b = ev.Bytes
		return true
	}
	c, ok := ev.Data.(api.OutputChunk)
	if !ok {
		return false
	}
	tail.s = c.Data
	n := len(c.Data)
	if c.Base64 {
		b, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return false // not ours to mend: sent as JSON, as it came
		}
		tail.s, tail.b, n = "", b, len(b)
	}
	writeLine(buf, ev.Type, "data", mustMarshal(chunkHead{Offset: c.Offset, Dropped: c.Dropped}), n)
	return true
}

// chunkHead is an output chunk's line in the framed form: its place, its
// bytes after the line.
type chunkHead struct {
	Offset  int64 `json:"offset"`
	Dropped int64 `json:"dropped,omitempty"`
}

// mustMarshal encodes values that always encode (strings, envelopes and
// raw JSON).
func mustMarshal(v any) []byte {
	b, err := api.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
