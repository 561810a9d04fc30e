package codeinterp

// The handler over a fake interpreter (a real one needs a sandbox;
// conformance/test/e2b-interpreter.test.mjs drives the real daemon with
// the stock SDK).

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

const sb = "sb-1"

// fakeInterp has one context, "c1", in sandbox sb.
type fakeInterp struct {
	functions.Interpreter
	ran     []api.RunCodeRequest
	deleted []string
	// endless, when set, makes RunCode emit until the consumer goes away,
	// then close it.
	endless chan struct{}
}

func (f *fakeInterp) ListContexts(_ context.Context, req api.ContextListRequest) (api.ContextListResponse, error) {
	if req.SandboxID != sb {
		return api.ContextListResponse{}, errdefs.New(errdefs.CodeNotFound, "no sandbox %s", req.SandboxID)
	}
	return api.ContextListResponse{Contexts: []api.ContextInfo{{ContextID: "c1", SandboxID: sb, Language: "python", Cwd: "/root"}}}, nil
}

func (f *fakeInterp) CreateContext(_ context.Context, req api.ContextCreateRequest) (api.ContextInfo, error) {
	return api.ContextInfo{ContextID: "c2", SandboxID: req.SandboxID, Language: req.Language, Cwd: req.Cwd}, nil
}

func (f *fakeInterp) DeleteContext(_ context.Context, req api.ContextRequest) (api.ContextInfo, error) {
	f.deleted = append(f.deleted, req.ContextID)
	return api.ContextInfo{ContextID: req.ContextID}, nil
}

func (f *fakeInterp) RunCode(_ context.Context, req api.RunCodeRequest, emit func(string, any) error) (api.CellResult, error) {
	f.ran = append(f.ran, req)
	if f.endless != nil {
		defer close(f.endless)
		for emit(api.EventStdout, api.OutputChunk{Data: strings.Repeat("x", 1024)}) == nil {
		}
		return api.CellResult{}, context.Canceled
	}
	_ = emit(api.EventStdout, api.OutputChunk{Data: "aGk=", Base64: true})
	_ = emit(api.EventStderr, api.OutputChunk{Data: "warn\n"})
	return api.CellResult{ExecutionCount: 3,
		Data:    map[string]any{"text/plain": "42", "text/html": "<b>42</b>", "application/x-unknown": "x"},
		Display: []map[string]any{{"image/png": "iVBO"}},
		Error:   &api.CellError{Name: "E", Value: "v", Traceback: []string{"a\n", "b"}}}, nil
}

func serve(t *testing.T) (*httptest.Server, *fakeInterp) { return serveWith(t, Options{}) }

func serveWith(t *testing.T, opts Options) (*httptest.Server, *fakeInterp) {
	f := &fakeInterp{}
	deps := functionstest.DepsOf(&functionstest.Fake{})
	deps.Interpreter = f
	srv := httptest.NewServer(New(functions.New(deps), opts))
	t.Cleanup(srv.Close)
	return srv, f
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set(api.HeaderE2BSandboxID, sb)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestExecute(t *testing.T) {
	srv, f := serve(t)
	res := do(t, srv, "POST", "/execute", `{"code":"x","language":"js"}`)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var lines []map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "timestamp")
		lines = append(lines, m)
	}
	want := []string{
		`{"text":"hi","type":"stdout"}`,
		`{"text":"warn\n","type":"stderr"}`,
		`{"is_main_result":false,"png":"iVBO","type":"result"}`,
		`{"html":"<b>42</b>","is_main_result":true,"text":"42","type":"result"}`,
		`{"name":"E","traceback":"a\nb\n","type":"error","value":"v"}`,
		`{"execution_count":3,"type":"number_of_executions"}`,
		`{"type":"end_of_execution"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("lines %v", lines)
	}
	for i, l := range lines {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(l)
		if got := strings.TrimSpace(b.String()); got != want[i] {
			t.Errorf("line %d = %s, want %s", i, got, want[i])
		}
	}
	if r := f.ran[0]; r.SandboxID != sb || r.Language != "javascript" || r.Code != "x" {
		t.Fatalf("ran %+v", r)
	}
}

func TestExecuteRefuses(t *testing.T) {
	srv, f := serve(t)
	for _, tc := range []struct{ name, body string }{
		{"r", `{"code":"x","language":"r"}`},
		{"a context of another sandbox", `{"code":"x","context_id":"c9"}`},
		{"not JSON", `{`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := do(t, srv, "POST", "/execute", tc.body); res.StatusCode < 400 {
				t.Fatalf("status %d", res.StatusCode)
			}
		})
	}
	if len(f.ran) != 0 {
		t.Fatalf("ran %v", f.ran)
	}
}

func TestExecuteEnvVars(t *testing.T) {
	srv, f := serve(t)
	res := do(t, srv, "POST", "/execute", `{"code":"x","env_vars":{"B":"2","A":"1"}}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	// The status comes before the cell runs: the stream's end says it ran.
	if _, err := io.ReadAll(res.Body); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 1 || !slices.Equal(f.ran[0].Env, []string{"A=1", "B=2"}) {
		t.Fatalf("ran %+v", f.ran)
	}
}

func TestUnsupportedLanguageIsNotFound(t *testing.T) {
	srv, _ := serve(t)
	res := do(t, srv, "POST", "/contexts", `{"language":"r"}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 404 || !strings.Contains(string(b), `language \"r\": hutch's code interpreter has no kernel for it`) {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

func TestContexts(t *testing.T) {
	srv, f := serve(t)
	res := do(t, srv, "POST", "/contexts", `{"language":"python","cwd":"/tmp"}`)
	var c e2bContext
	_ = json.NewDecoder(res.Body).Decode(&c)
	if res.StatusCode != 200 || c != (e2bContext{ID: "c2", Language: "python", Cwd: "/tmp"}) {
		t.Fatalf("%d %+v", res.StatusCode, c)
	}
	res = do(t, srv, "GET", "/contexts", "")
	var cs []e2bContext
	_ = json.NewDecoder(res.Body).Decode(&cs)
	if len(cs) != 1 || cs[0].ID != "c1" {
		t.Fatalf("list %+v", cs)
	}
	if res := do(t, srv, "DELETE", "/contexts/c9", ""); res.StatusCode != 404 {
		t.Fatalf("delete of another sandbox's context: %d", res.StatusCode)
	}
	if res := do(t, srv, "DELETE", "/contexts/c1", ""); res.StatusCode != 204 || len(f.deleted) != 1 {
		t.Fatalf("delete: %d %v", res.StatusCode, f.deleted)
	}
}

// A client that goes away ends the cell: the function's emit fails and it
// returns.
func TestExecuteClientGoesAway(t *testing.T) {
	srv, f := serve(t)
	f.endless = make(chan struct{})
	req, _ := http.NewRequest("POST", srv.URL+"/execute", strings.NewReader(`{"code":"while True: print('x')"}`))
	req.Header.Set(api.HeaderE2BSandboxID, sb)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil || !strings.Contains(line, `"stdout"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	res.Body.Close()
	<-f.endless
}

// A client that stops reading is cut off by the write timeout: the cell
// ends rather than wait for it.
func TestExecuteSlowClientIsCutOff(t *testing.T) {
	srv, f := serveWith(t, Options{WriteTimeout: 50 * time.Millisecond})
	f.endless = make(chan struct{})
	req, _ := http.NewRequest("POST", srv.URL+"/execute", strings.NewReader(`{"code":"x"}`))
	req.Header.Set(api.HeaderE2BSandboxID, sb)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	<-f.endless // never read: the server's writes stall until their deadline
}
