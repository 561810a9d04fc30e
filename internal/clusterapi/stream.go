package clusterapi

// Streams over the node-to-node channel: a streaming function of the table
// (a streamed exec, a followed process, a file's read, a watch) called on
// this node by a transport that is not forwarded as HTTP (MCP, the engine
// WebSocket, E2B's envd) for a sandbox another node holds runs there; its
// events come back as NDJSON and are given to the caller as the holding
// node's own would be.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// maxPeerLine bounds one line of a node's event stream (as the client's:
// an interpreter cell's result with its images).
const maxPeerLine = 48 << 20

// eventData are the Go types of the events whose data the table's
// consumers read typed (E2B's envd, the terminal, the file routes); any
// other event's data is passed on as its JSON.
var eventData = map[string]reflect.Type{
	api.EventStart:       reflect.TypeFor[api.ProcessStartResponse](),
	api.EventStdout:      reflect.TypeFor[api.OutputChunk](),
	api.EventStderr:      reflect.TypeFor[api.OutputChunk](),
	api.EventLog:         reflect.TypeFor[api.LogLine](),
	functions.EventEntry: reflect.TypeFor[api.FsEntry](),
	"change":             reflect.TypeFor[api.FsWatchEvent](),
}

// ForwardStream runs streaming function fn on req on the node that holds
// the sandbox req's sandbox_id names, when that is another node
// (functions.Cluster): its answer is a *functions.Stream of that node's
// events, or its one value (a function that streams only when asked).
func (a *API) ForwardStream(ctx context.Context, fn string, req any, resp reflect.Type) (any, bool, error) {
	target, id, body, ok := a.tableTarget(ctx, req)
	if !ok {
		return nil, false, nil
	}
	rctx, cancel := context.WithCancel(ctx)
	res, err := a.peerRequest(rctx, target.String(), auth.OwnerFrom(ctx), fn, body, "application/x-ndjson")
	if err != nil {
		cancel()
		return nil, true, a.peerError(id, err)
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/x-ndjson" {
		// One value: a function that streams only when its request asks.
		defer cancel()
		defer res.Body.Close()
		out := reflect.New(resp)
		if err := json.NewDecoder(res.Body).Decode(out.Interface()); err != nil {
			return nil, true, a.peerError(id, err)
		}
		return out.Elem().Interface(), true, nil
	}
	return functions.NewStream(ctx, func(sctx context.Context, e functions.Emitter) (any, error) {
		defer cancel()
		defer context.AfterFunc(sctx, cancel)()
		defer res.Body.Close()
		out := reflect.New(resp)
		err := readStream(res, out.Interface(), func(typ string, data json.RawMessage) error {
			ev := decodeEvent(typ, data)
			if fn == api.FnEventsStream && typ != api.EventStreamOpen {
				ev.ID = eventID(data) // SSE's id, as the holding node's
			}
			return e.Emit(ev)
		})
		if err != nil {
			return nil, a.peerError(id, err)
		}
		return out.Elem().Interface(), nil
	}, nil), true, nil
}

// peerError is the caller's error for a forwarded call's failure: the
// holding node's own error as it said it, or S500; a miss there drops
// what the cache says of sandbox id.
func (a *API) peerError(id string, err error) error {
	var env *api.ErrorEnvelope
	if errors.As(err, &env) {
		if env.Code == string(errdefs.CodeNotFound) {
			a.forget(id)
		}
		return errdefs.New(errdefs.Code(env.Code), "%s", env.Message)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	a.forget(id)
	return errdefs.New(errdefs.CodeInternal, "the node holding sandbox %s did not answer: %v", id, err)
}

// readStream reads an NDJSON event stream of a node's answer res: on is
// told each event; the result is decoded into out; an error event is
// returned as its *api.ErrorEnvelope; a stream cut before either is an
// error.
func readStream(res *http.Response, out any, on func(typ string, data json.RawMessage) error) error {
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxPeerLine)
	for sc.Scan() {
		var line struct {
			Type   string             `json:"type"`
			Data   json.RawMessage    `json:"data"`
			Result json.RawMessage    `json:"result"`
			Error  *api.ErrorEnvelope `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("a node's event stream: %w", err)
		}
		switch line.Type {
		case "result":
			if out == nil {
				return nil
			}
			return json.Unmarshal(line.Result, out)
		case "error":
			if line.Error == nil {
				return errors.New("a node's event stream: an error event without an error")
			}
			return line.Error
		}
		if err := on(line.Type, line.Data); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("a node's event stream was cut off: %w", err)
	}
	return errors.New("a node's event stream was cut off before its result")
}

// decodeEvent is a node's event of type typ as the holding node gave it:
// bytes (base64 on the wire) as bytes, data of the types consumers read
// typed as those, any other as its JSON.
func decodeEvent(typ string, data json.RawMessage) functions.Event {
	if typ == functions.EventData {
		var b []byte
		if json.Unmarshal(data, &b) == nil {
			return functions.Event{Type: typ, Bytes: b}
		}
	}
	if t, ok := eventData[typ]; ok {
		v := reflect.New(t)
		if json.Unmarshal(data, v.Interface()) == nil {
			return functions.Event{Type: typ, Data: v.Elem().Interface()}
		}
	}
	return functions.Event{Type: typ, Data: data}
}

// eventID is the id of the event record data.
func eventID(data json.RawMessage) string {
	var rec struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &rec)
	return rec.ID
}
