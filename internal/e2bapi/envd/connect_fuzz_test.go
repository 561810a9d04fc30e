package envd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// fuzzProcedures are the envd procedures the fuzz target calls.
var fuzzProcedures = []string{
	"/filesystem.Filesystem/Stat", "/filesystem.Filesystem/MakeDir", "/filesystem.Filesystem/Move",
	"/filesystem.Filesystem/ListDir", "/filesystem.Filesystem/Remove", "/filesystem.Filesystem/WatchDir",
	"/filesystem.Filesystem/CreateWatcher", "/filesystem.Filesystem/GetWatcherEvents", "/filesystem.Filesystem/RemoveWatcher",
	"/process.Process/List", "/process.Process/Connect", "/process.Process/Start", "/process.Process/Update",
	"/process.Process/StreamInput", "/process.Process/SendInput", "/process.Process/SendSignal", "/process.Process/CloseStdin",
}

// fuzzContentTypes are the codecs and framings a client may name.
var fuzzContentTypes = []string{"application/json", "application/proto", "application/connect+json", "application/connect+proto"}

// envelope frames msg as one Connect streaming message.
func envelope(flags byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// FuzzConnect posts hostile bodies (unary messages, or Connect envelopes
// with any flags and declared length) to every envd procedure, in every
// codec, and checks: the handler answers within its deadline, a unary
// error is Connect's JSON error with a code (or a bare 415 for the wrong
// codec), and the answer stays within
// the message bound.
func FuzzConnect(f *testing.F) {
	h := New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), slog.New(slog.DiscardHandler))
	for i, body := range [][]byte{[]byte(`{"path":"/tmp"}`), []byte(`{"process":{"cmd":"/bin/ls"}}`),
		envelope(0, []byte(`{"path":"/"}`)), envelope(1, []byte{0x1f, 0x8b}), envelope(2, []byte(`{}`)),
		{0, 0xff, 0xff, 0xff, 0xff}, []byte(`{"process":{"pid":1},"signal":"SIGNAL_SIGKILL"}`)} {
		f.Add(uint8(i), uint8(i), body)
	}
	f.Fuzz(func(t *testing.T, proc, ctype uint8, body []byte) {
		path := fuzzProcedures[int(proc)%len(fuzzProcedures)]
		ct := fuzzContentTypes[int(ctype)%len(fuzzContentTypes)]
		ctx, cancel := context.WithTimeout(auth.WithOwner(context.Background(), "alice"), 10*time.Second)
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
		r.Header.Set("Content-Type", ct)
		r.Header.Set("Connect-Protocol-Version", "1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out, _ := io.ReadAll(w.Result().Body)
		if len(out) > maxMessage+64<<10 {
			t.Fatalf("%s answered %d bytes", path, len(out))
		}
		// 415 (a streaming procedure asked in the unary codec, or the
		// reverse) is the Connect protocol's answer, without a body.
		if ct == "application/json" && w.Code != http.StatusOK && w.Code != http.StatusUnsupportedMediaType {
			var e struct {
				Code string `json:"code"`
			}
			if err := json.Unmarshal(out, &e); err != nil || e.Code == "" {
				t.Fatalf("%s: status %d with a body that is no Connect error: %q", path, w.Code, out)
			}
		}
	})
}
