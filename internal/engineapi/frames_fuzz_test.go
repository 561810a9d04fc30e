package engineapi

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// fuzzMaxMessage is the message bound of the fuzz target's server, small
// so that the fuzzer reaches the oversized path too.
const fuzzMaxMessage = 4 << 10

// FuzzFrames sends a hostile frame (text or binary) on a fresh session and
// checks: the session stays up and answers a ping, everything it sends is
// a JSON object of the protocol, and an answer never exceeds the message
// bound plus its framing (no echo of an oversized message).
func FuzzFrames(f *testing.F) {
	s := New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), Options{MaxMessageBytes: fuzzMaxMessage})
	hs := httptest.NewServer(s)
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	for _, m := range []string{`{"type":"ping"}`, `{"type":"invokefunction","invocation_id":"1","function_id":"sandbox::list","data":{}}`,
		`{"type":"invokefunction","invocation_id":"2","function_id":"sandbox::create","data":{"image":5}}`,
		`{"type":"reattach","previous_worker_id":"w","reattach_token":"t"}`, `{"type":"registertrigger","id":"t1","trigger_type":"sandbox::events","function_id":"f","config":{}}`,
		`{"type":"invocationresult","invocation_id":"9","result":{}}`, `{"invocation_id":"x","type":"nope"}`,
		`{"type":"invokefunction","invocation_id":"3","function_id":"sandbox::exec","action":{"type":"void"},"data":{"sandbox_id":"x","cmd":["true"]}}`,
		`{"invocation_id":"big","function_id":"f","data":"` + strings.Repeat("a", fuzzMaxMessage) + `"}`} {
		f.Add(m, false)
	}
	f.Add("\x00\xff", true)
	f.Fuzz(func(t *testing.T, msg string, binary bool) {
		wc := dial(t, url)
		typ := websocket.MessageText
		if binary {
			typ = websocket.MessageBinary
		}
		wc.sendRaw(typ, []byte(msg))
		wc.send(map[string]any{"type": "ping"})
		for {
			m := wc.recv() // fails the test if the session ended
			switch m["type"] {
			case "pong":
				return
			case "invocationresult", "triggerregistrationresult", "invokefunction", "unregistertrigger":
			default:
				t.Fatalf("unexpected message %v", m)
			}
			if e, _ := m["error"].(map[string]any); e != nil {
				if msg, _ := e["message"].(string); len(msg) > fuzzMaxMessage+1024 {
					t.Fatalf("an error message of %d bytes", len(msg))
				}
			}
		}
	})
}
