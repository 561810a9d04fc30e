package client_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// framedOutput runs ExecStreamFramed against url and returns what each
// output stream brought and the start event's data.
func framedOutput(t *testing.T, url string) (stdout, stderr []byte, start string, res api.ExecResponse) {
	t.Helper()
	c := client.New(url, "")
	res, err := c.ExecStreamFramed(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"x"}}, func(ev client.FramedEvent) error {
		switch ev.Type {
		case api.EventStart:
			start = string(ev.Data)
		case api.EventStdout:
			stdout = append(stdout, ev.Bytes...)
		case api.EventStderr:
			stderr = append(stderr, ev.Bytes...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr, start, res
}

// TestExecStreamFramed: output comes raw after its line, text and bytes
// that are not UTF-8 (base64 in the JSON forms) alike, with its offsets
// beside it; other events and the result are NDJSON's.
func TestExecStreamFramed(t *testing.T) {
	text := strings.Repeat("hello\n", 50000)
	bin := string([]byte{0xff, 0x00, 0xfe, '\n'})
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		code := 3
		return api.ExecResponse{Stdout: text, Stderr: bin, ExitCode: &code}, nil
	}}
	var accepted, answered string
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepted = r.Header.Get("Accept")
		h.ServeHTTP(w, r)
		answered = w.Header().Get("Content-Type")
	}))
	defer srv.Close()
	stdout, stderr, start, res := framedOutput(t, srv.URL)
	if accepted != "application/x-hutch-frames" || answered != accepted {
		t.Fatalf("Accept %q answered as %q", accepted, answered)
	}
	if string(stdout) != text || string(stderr) != bin || start != `{"pid":1}` || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Fatalf("stdout %d bytes, stderr %q, start %s, result %+v", len(stdout), stderr, start, res)
	}

	// A daemon from before the framed form answers NDJSON: the chunks'
	// bytes are decoded into Bytes all the same.
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write([]byte(`{"type":"start","data":{"pid":1}}
{"type":"stdout","data":{"data":"hi\n","offset":0}}
{"type":"stderr","data":{"data":"/wD+Cg==","base64":true,"offset":0}}
{"type":"result","result":{"exit_code":0,"success":true}}
`))
	}))
	defer old.Close()
	stdout, stderr, _, res = framedOutput(t, old.URL)
	if string(stdout) != "hi\n" || !bytes.Equal(stderr, []byte(bin)) || !res.Success {
		t.Fatalf("from NDJSON: stdout %q, stderr %q, result %+v", stdout, stderr, res)
	}
}

// TestFramedStreamCut: a stream that ends inside a frame's bytes is cut.
func TestFramedStreamCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-hutch-frames")
		w.Write([]byte(`{"type":"stdout","data":{"offset":0},"bytes":10}` + "\nabc"))
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "").ExecStreamFramed(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"x"}}, nil)
	if err == nil || !strings.Contains(err.Error(), client.ErrStreamCut.Error()) {
		t.Fatalf("a cut frame: %v", err)
	}
}
