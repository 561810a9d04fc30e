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
// where <data> is the event's JSON value, or its bytes in base64. A stream
// ends with exactly one result or error; one that stops without either was
// cut off. Each event is flushed as it comes, under the write timeout
// (progressWriter), so a client that stops reading is disconnected and the
// function's context cancelled; nothing queues beyond the stream's own
// bound. An error before the first event is an ordinary error answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Media types of a stream's answer.
const (
	sseType    = "text/event-stream"
	ndjsonType = "application/x-ndjson"
)

// eventStream is the answer of a streaming function.
type eventStream struct {
	s   *server
	ctx context.Context
	st  *functions.Stream
	sse bool
}

// events renders st for r: SSE when r accepts it, else NDJSON.
func (s *server) events(r *http.Request, st *functions.Stream) *eventStream {
	return &eventStream{s: s, ctx: r.Context(), st: st, sse: strings.Contains(r.Header.Get("Accept"), sseType)}
}

func (e *eventStream) stream(w http.ResponseWriter, body io.Writer) int {
	defer e.st.Close()
	ev, err := e.st.Next(e.ctx)
	e.s.answering(w)
	if err != nil && err != io.EOF {
		return e.s.writeError(w, err)
	}
	h := w.Header()
	h.Set("Content-Type", ndjsonType)
	if e.sse {
		h.Set("Content-Type", sseType)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := getBuffer()
	defer putBuffer(buf)
	for {
		buf.Reset()
		switch {
		case err == io.EOF:
			e.encode(buf, "result", e.st.Result())
		case err != nil:
			e.encodeError(buf, err)
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
		if _, werr := body.Write(buf.Bytes()); werr != nil || rc.Flush() != nil {
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
	line := ndjsonLine{Type: typ}
	switch typ {
	case "result":
		line.Result = raw
	case "error":
		line.Error = raw
	default:
		line.Data = raw
	}
	buf.Write(mustMarshal(line))
	buf.WriteByte('\n')
}

// ndjsonLine is one line of an NDJSON stream.
type ndjsonLine struct {
	Type   string          `json:"type"`
	Data   json.RawMessage `json:"data,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
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
