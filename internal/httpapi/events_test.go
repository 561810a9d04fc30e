package httpapi_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// wait bounds every wait of these tests; none asserts a duration.
const wait = 30 * time.Second

// fileFake is the shared fake plus a download of data whose reader then
// fails with err (io.EOF: a whole file), or, with block, waits for the
// request's context to end and reports it on cancelled.
type fileFake struct {
	*functionstest.Fake
	functions.FS
	data      string
	err       error
	block     bool
	cancelled chan struct{}

	mu  sync.Mutex
	ls  []api.FsLsRequest
	obs []string
}

func newFileFake(data string, err error) *fileFake {
	return &fileFake{Fake: &functionstest.Fake{}, data: data, err: err, cancelled: make(chan struct{})}
}

func (f *fileFake) deps() functions.Deps {
	d := functionstest.DepsOf(f)
	d.Observer = f
	return d
}

func (f *fileFake) Called(id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = append(f.obs, id)
}

func (f *fileFake) Ls(_ context.Context, r api.FsLsRequest) (api.FsLsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ls = append(f.ls, r)
	return api.FsLsResponse{Entries: []api.FsEntry{}}, nil
}

func (f *fileFake) Download(ctx context.Context, r api.FsDownloadRequest) (api.FsEntry, io.ReadCloser, error) {
	if r.Path == "/missing" {
		return api.FsEntry{}, nil, errdefs.New(errdefs.CodeFSNotFound, "no such file: %s", r.Path)
	}
	var rd io.Reader = strings.NewReader(f.data)
	switch {
	case f.block:
		// Seen whether or not the stream reads on: a write that finds the
		// client gone may end it before it reaches the blocking read.
		context.AfterFunc(ctx, func() { close(f.cancelled) })
		rd = io.MultiReader(rd, blockReader{ctx: ctx})
	case f.err != nil:
		rd = io.MultiReader(rd, failReader{f.err})
	}
	return api.FsEntry{Name: "f", Size: int64(len(f.data)), Mode: "0644", Mtime: 1}, io.NopCloser(rd), nil
}

// blockReader blocks until ctx ends.
type blockReader struct{ ctx context.Context }

func (b blockReader) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// serveFiles serves f until the test ends.
func serveFiles(t *testing.T, f *fileFake) string {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(functions.New(f.deps()), httpapi.Options{}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// postStream calls sandbox::fs::download through the generic route with
// accept and returns the answer.
func postStream(t *testing.T, ctx context.Context, url, accept, path string) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"sandbox_id":%q,"path":%q}`, id, path)
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/functions/sandbox::fs::download", strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ typ, data string }

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// ndLine is one NDJSON line of a stream.
type ndLine struct {
	Type   string          `json:"type"`
	Data   json.RawMessage `json:"data"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func readNDJSON(t *testing.T, r io.Reader) []ndLine {
	t.Helper()
	var out []ndLine
	dec := json.NewDecoder(r)
	for {
		var l ndLine
		if err := dec.Decode(&l); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("NDJSON line %d: %v", len(out), err)
		}
		out = append(out, l)
	}
}

func TestStreamAsSSE(t *testing.T) {
	data := strings.Repeat("abc", 30000)
	url := serveFiles(t, newFileFake(data, nil))
	resp := postStream(t, context.Background(), url, "text/event-stream", "/f")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readSSE(t, resp.Body)
	if len(evs) < 3 || evs[0].typ != "entry" || evs[len(evs)-1].typ != "result" {
		t.Fatalf("events %v: want entry, data..., result", evs)
	}
	var got strings.Builder
	for _, ev := range evs[1 : len(evs)-1] {
		var b []byte
		if err := json.Unmarshal([]byte(ev.data), &b); ev.typ != "data" || err != nil {
			t.Fatalf("event %+v: %v", ev, err)
		}
		got.Write(b)
	}
	if got.String() != data || evs[len(evs)-1].data != fmt.Sprintf(`{"bytes":%d}`, len(data)) {
		t.Fatalf("streamed %d bytes, result %s", got.Len(), evs[len(evs)-1].data)
	}
}

func TestStreamAsNDJSON(t *testing.T) {
	url := serveFiles(t, newFileFake("hello", nil))
	for _, accept := range []string{"application/x-ndjson", ""} {
		resp := postStream(t, context.Background(), url, accept, "/f")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("Accept %q: status %d, Content-Type %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		lines := readNDJSON(t, resp.Body)
		if len(lines) != 3 || lines[0].Type != "entry" || lines[1].Type != "data" || lines[2].Type != "result" {
			t.Fatalf("Accept %q: lines %+v", accept, lines)
		}
		if string(lines[1].Data) != `"`+base64.StdEncoding.EncodeToString([]byte("hello"))+`"` || string(lines[2].Result) != `{"bytes":5}` {
			t.Fatalf("Accept %q: data %s, result %s", accept, lines[1].Data, lines[2].Result)
		}
	}
}

// TestStreamErrors: an error before the first event is an ordinary error
// answer; one midway is the stream's last event, in each form.
func TestStreamErrors(t *testing.T) {
	url := serveFiles(t, newFileFake("some bytes", errdefs.New(errdefs.CodeFSIO, "the disk failed")))
	resp := postStream(t, context.Background(), url, "text/event-stream", "/missing")
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&env)
	if resp.StatusCode == 200 || env.Error.Code != "S211" {
		t.Fatalf("missing file: status %d, %+v; want an S211 error answer", resp.StatusCode, env)
	}

	evs := readSSE(t, postStream(t, context.Background(), url, "text/event-stream", "/f").Body)
	last := evs[len(evs)-1]
	if last.typ != "error" || !strings.Contains(last.data, `"code":"S216"`) {
		t.Fatalf("SSE events %v: want an S216 error last", evs)
	}
	lines := readNDJSON(t, postStream(t, context.Background(), url, "application/x-ndjson", "/f").Body)
	if l := lines[len(lines)-1]; l.Type != "error" || l.Error == nil || l.Error.Code != "S216" {
		t.Fatalf("NDJSON lines %+v: want an S216 error last", lines)
	}
}

// TestStreamClientGoneCancels: a client that goes away mid-stream cancels
// the function's context.
func TestStreamClientGoneCancels(t *testing.T) {
	f := newFileFake("first", nil)
	f.block = true
	url := serveFiles(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	resp := postStream(t, ctx, url, "application/x-ndjson", "/f")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"entry"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	select {
	case <-f.cancelled:
	case <-time.After(wait):
		t.Fatal("the function's context was not cancelled when its client went away")
	}
}

// TestStalledEventStreamIsCut: a client that stops reading an endless
// stream is cut off once a write waits for the write timeout, and the
// function ends; nothing is buffered for it without bound.
func TestStalledEventStreamIsCut(t *testing.T) {
	f := newStreamFake()
	addr := timedServer(t, f.deps(), time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := fmt.Sprintf(`{"sandbox_id":%q,"path":"/zeros"}`, id)
	fmt.Fprintf(conn, "POST /v1/functions/sandbox::fs::download HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	select {
	case <-f.closed:
	case <-time.After(time.Minute):
		t.Fatal("the event stream to a client that reads nothing was not cut")
	}
}

// TestPathParamsReachTheTypedRequest covers the routes the table's Params
// serve that TestRoutes does not, and checks that REST exec goes through
// the table's wrapper (the observer sees it).
func TestPathParamsReachTheTypedRequest(t *testing.T) {
	f := newFileFake("", nil)
	url := serveFiles(t, f)
	resp, err := http.Post(url+"/v1/sandboxes/"+id+"/fs/ls", "application/json", strings.NewReader(`{"path":"/"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("fs/ls: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(url+"/v1/sandboxes/"+id+"/exec", "application/json", strings.NewReader(`{"argv":["true"]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("exec: %v %v", resp, err)
	}
	resp.Body.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ls) != 1 || f.ls[0].SandboxID != id || f.ls[0].Path != "/" {
		t.Fatalf("fs/ls requests %+v", f.ls)
	}
	if calls := f.CallsOf("Exec"); len(calls) != 1 || calls[0].Req.(api.ExecRequest).SandboxID != id {
		t.Fatalf("exec calls %+v", calls)
	}
	if strings.Join(f.obs, " ") != "sandbox::fs::ls sandbox::exec" { // hutch::exec is observed as sandbox::exec
		t.Fatalf("observed %q: REST exec bypassed the table's wrapper", f.obs)
	}
}

// TestHandlerStreamStatus: the status of a route served by a plain handler
// (/metrics) is the one the handler wrote.
func TestHandlerStreamStatus(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "scrape failed", http.StatusServiceUnavailable)
	})
	h := httpapi.New(functions.New(functionstest.DepsOf(&functionstest.Fake{})), httpapi.Options{Metrics: metrics, Logger: log})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(logs.String(), "status=503") {
		t.Fatalf("answered %d, logged %q; want 503 in both", rec.Code, logs.String())
	}
}

type failReader struct{ err error }

func (f failReader) Read([]byte) (int, error) { return 0, f.err }

// TestStreamAsFrames: in the framed form a data event's bytes follow its
// line raw, as many as the line says; the other lines are NDJSON's.
func TestStreamAsFrames(t *testing.T) {
	data := strings.Repeat("\x00\xffabc", 40000)
	url := serveFiles(t, newFileFake(data, nil))
	resp := postStream(t, context.Background(), url, "application/x-hutch-frames", "/f")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-hutch-frames" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	var types []string
	var got []byte
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		} else if err != nil {
			t.Fatalf("after %v: %v", types, err)
		}
		var l struct {
			Type   string          `json:"type"`
			Result json.RawMessage `json:"result"`
			Bytes  *int            `json:"bytes"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		types = append(types, l.Type)
		if l.Bytes != nil {
			b := make([]byte, *l.Bytes)
			if _, err := io.ReadFull(br, b); err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
		}
		if l.Type == "result" && string(l.Result) != fmt.Sprintf(`{"bytes":%d}`, len(data)) {
			t.Fatalf("result %s", l.Result)
		}
	}
	if string(got) != data || types[0] != "entry" || types[1] != "data" || types[len(types)-1] != "result" {
		t.Fatalf("events %v brought %d bytes, want entry, data..., result and %d", types, len(got), len(data))
	}
}
