package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fake answers the functions the tools call, recording them; it has
// every function of the table (their tools).
type fake struct {
	mu    sync.Mutex
	calls []string
	// stream, when set, runs the streams of the generated tools.
	stream func(ctx context.Context, id string, on func(string, json.RawMessage) error) error
}

func (f *fake) Functions(context.Context) ([]api.FunctionInfo, error) {
	return describe(functions.New(functionstest.StubDeps())), nil
}

func (f *fake) record(id string, req any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(req)
	f.calls = append(f.calls, id+" "+string(b))
}

func (f *fake) Call(_ context.Context, id string, req, out any) error {
	f.record(id, req)
	switch id {
	case api.FnCreate:
		return recode(api.CreateResponse{SandboxID: "sb-1", Image: "python"}, out)
	case api.FnFsRead:
		if req.(api.FsReadRequest).Path == "/missing" {
			return &api.ErrorEnvelope{Code: "S211", Message: "no such file: /missing", FixNote: "list the directory first"}
		}
		body := "hello"
		return recode(api.FsReadResponse{Body: &body}, out)
	case api.FnExecResult:
		code := 0
		return recode(api.ExecResponse{ExitCode: &code}, out)
	case api.FnVolumeDelete:
		return &api.ErrorEnvelope{Code: "S262", Message: "volume v is mounted by sb-2"}
	}
	return recode(map[string]any{"function": id}, out)
}

func (f *fake) Stream(ctx context.Context, id string, req any, on func(string, json.RawMessage) error, out any) error {
	f.record(id, req)
	switch id {
	case api.FnRunCode:
		on(api.EventStdout, json.RawMessage(`{"data":"printed\n","offset":0}`))
		png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
		return recode(api.CellResult{Status: "ok", Data: map[string]any{"text/plain": "42"}, Display: []map[string]any{{"image/png": png}}}, out)
	case api.FnExecStream:
		for _, line := range []string{"one\n", "two\n"} {
			b, _ := json.Marshal(api.OutputChunk{Data: line})
			on(api.EventStdout, b)
		}
		code := 0
		return recode(api.ExecResponse{ExitCode: &code}, out)
	}
	if f.stream != nil {
		if err := f.stream(ctx, id, on); err != nil {
			return err
		}
	}
	return recode(map[string]any{"function": id}, out)
}

// connect runs a server over b and returns a client session of it.
func connect(t *testing.T, b Backend, progress func(*mcp.ProgressNotificationParams)) (*mcp.ClientSession, func()) {
	return connectTools(t, b, "", progress)
}

// connectTools is connect with the tool set tools.
func connectTools(t *testing.T, b Backend, tools string, progress func(*mcp.ProgressNotificationParams)) (*mcp.ClientSession, func()) {
	t.Helper()
	srv, stop, err := New(context.Background(), b, Options{Version: "test", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				progress(r.Params)
			}
		}})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() { cs.Close(); ss.Wait(); stop() }
}

func TestToolsAndDefaultSandbox(t *testing.T) {
	f := &fake{}
	// Notifications are handled on the client's own goroutines: the
	// result may be read before the last of them.
	var notesMu sync.Mutex
	var notes []string
	cs, end := connect(t, f, func(p *mcp.ProgressNotificationParams) {
		notesMu.Lock()
		defer notesMu.Unlock()
		notes = append(notes, p.Message)
	})
	progressText := func() string {
		notesMu.Lock()
		defer notesMu.Unlock()
		return strings.Join(notes, "")
	}
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, name := range []string{"run_code", "run_command", "file_read", "file_write", "file_edit", "file_search", "sandbox_create", "sandbox_stop"} {
		if byName[name] == nil {
			t.Fatalf("no tool %s", name)
		}
	}
	schema, _ := json.Marshal(byName["run_code"].InputSchema)
	if !strings.Contains(string(schema), `"sandbox_id"`) || !strings.Contains(string(schema), `"required":["code"]`) {
		t.Errorf("run_code's schema: %s", schema)
	}
	if !byName["file_read"].Annotations.ReadOnlyHint || *byName["sandbox_stop"].Annotations.DestructiveHint != true {
		t.Errorf("annotations: %+v %+v", byName["file_read"].Annotations, byName["sandbox_stop"].Annotations)
	}

	// run_code without a sandbox creates the session's default one; its
	// value and figure come back as text and an image.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "6*7"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %+v %v", res, err)
	}
	var sawImage, saw42 bool
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			sawImage = c.MIMEType == "image/png" && strings.HasPrefix(string(c.Data), "\x89PNG")
		case *mcp.TextContent:
			saw42 = saw42 || c.Text == "42"
		}
	}
	if !sawImage || !saw42 {
		t.Errorf("run_code content: %+v", res.Content)
	}
	// run_command streams its output as progress when asked to.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo one; echo two"}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil || res.IsError {
		t.Fatalf("run_command: %+v %v", res, err)
	}
	if got := progressText(); !testutil.Poll(30*time.Second, func() bool { got = progressText(); return got == "one\ntwo\n" }) {
		t.Errorf("progress notifications: %q", got)
	}
	// An S-code error is a tool error with its fix.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "file_read", Arguments: map[string]any{"path": "/missing"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "S211") || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "fix: list the directory first") {
		t.Fatalf("an error: %+v %v", res, err)
	}
	// A URL is fetched inside the sandbox, an argument of the script,
	// never code; another scheme is refused.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "file_upload_url", Arguments: map[string]any{"url": "https://example.com/a b';x", "path": "/tmp/a"}})
	if err != nil || res.IsError {
		t.Fatalf("file_upload_url: %+v %v", res, err)
	}
	f.mu.Lock()
	last := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if !strings.Contains(last, `"sh","https://example.com/a b';x","/tmp/a"]`) {
		t.Errorf("the fetch: %s", last)
	}
	if res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "file_upload_url", Arguments: map[string]any{"url": "file:///etc/passwd", "path": "/tmp/a"}}); !res.IsError {
		t.Error("a file: URL was fetched")
	}
	end()
	f.mu.Lock()
	defer f.mu.Unlock()
	creates, last := 0, f.calls[len(f.calls)-1]
	for _, c := range f.calls {
		if strings.HasPrefix(c, "sandbox::create ") {
			creates++
		}
	}
	if creates != 1 || !strings.HasPrefix(last, "sandbox::stop ") || !strings.Contains(last, "sb-1") {
		t.Errorf("one default sandbox, stopped at the end: %v", f.calls)
	}
}

// TestGitTools: the git tools call sandbox::git::* on the session's
// default sandbox with the call's credentials, which no result repeats.
func TestGitTools(t *testing.T) {
	f := &fake{}
	cs, end := connect(t, f, nil)
	defer end()
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_clone", Arguments: map[string]any{
		"url": "https://git.example/repo.git", "path": "/work/repo", "username": "me", "token": "tok-123"}})
	if err != nil || res.IsError {
		t.Fatalf("git_clone: %+v %v", res, err)
	}
	f.mu.Lock()
	last := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if !strings.HasPrefix(last, api.FnGitClone+" ") || !strings.Contains(last, `"sandbox_id":"sb-1"`) || !strings.Contains(last, `"token":"tok-123"`) {
		t.Errorf("git_clone called %s", last)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "tok-123") {
			t.Errorf("the result repeats the token: %s", tc.Text)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_push", Arguments: map[string]any{
		"path": "/work/repo", "token": "tok-123", "credentials_for": "https://git.example/"}}); err != nil || res.IsError {
		t.Fatalf("git_push: %+v %v", res, err)
	}
	f.mu.Lock()
	last = f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if !strings.HasPrefix(last, api.FnGitPush+" ") || !strings.Contains(last, `"credentials_for":"https://git.example/"`) {
		t.Errorf("git_push called %s", last)
	}
	for name, fn := range map[string]string{"git_status": api.FnGitStatus, "git_diff": api.FnGitDiff, "git_log": api.FnGitLog, "git_push": api.FnGitPush, "git_pull": api.FnGitPull} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": "/work/repo"}}); err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
		f.mu.Lock()
		last := f.calls[len(f.calls)-1]
		f.mu.Unlock()
		if !strings.HasPrefix(last, fn+" ") || !strings.Contains(last, `"path":"/work/repo"`) {
			t.Errorf("%s called %s", name, last)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "git_commit", Arguments: map[string]any{"message": "first", "all": true}}); err != nil || res.IsError {
		t.Fatalf("git_commit: %+v %v", res, err)
	}
}

// defaultTools are the tools of the default set: the 24 written ones.
var defaultTools = []string{"expose_port", "file_edit", "file_list", "file_read", "file_search", "file_upload_url", "file_write",
	"git_add", "git_clone", "git_commit", "git_diff", "git_log", "git_pull", "git_push", "git_status",
	"process_kill", "process_output", "run_code", "run_command", "sandbox_create", "sandbox_fork", "sandbox_list", "sandbox_snapshot", "sandbox_stop"}

// listTools lists the tools of set over f, by name.
func listTools(t *testing.T, f *fake, set string) map[string]*mcp.Tool {
	t.Helper()
	cs, end := connectTools(t, f, set, nil)
	defer end()
	out := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tl.Name] = tl
	}
	return out
}

func names(tools map[string]*mcp.Tool) []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestToolSets: the default set is the written tools; all is every
// function offered as a tool too, at least seed 004's 39, in every area;
// an area chooses its tools; an unknown set is S001.
func TestToolSets(t *testing.T) {
	f := &fake{}
	for _, set := range []string{"", "default"} {
		if got := names(listTools(t, f, set)); !slices.Equal(got, defaultTools) {
			t.Errorf("set %q: %v", set, got)
		}
	}
	all := listTools(t, f, "all")
	if len(all) < 39 {
		t.Errorf("all has %d tools: %v", len(all), names(all))
	}
	byArea := map[string][]string{}
	generated, err := functionTools(describe(functions.New(functionstest.StubDeps())))
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range generated {
		byArea[ft.tool.Area] = append(byArea[ft.tool.Area], ft.tool.Name)
		if all[ft.tool.Name] == nil {
			t.Errorf("all lacks %s", ft.tool.Name)
		}
	}
	// No generated tool takes the name of a written one.
	if len(all) != len(defaultTools)+len(generated) {
		t.Errorf("all has %d tools, not the %d written and %d generated", len(all), len(defaultTools), len(generated))
	}
	for _, area := range api.ToolAreas {
		got := names(listTools(t, f, area))
		if len(got) == 0 {
			t.Errorf("area %s has no tools", area)
		}
		for _, n := range byArea[area] {
			if !slices.Contains(got, n) {
				t.Errorf("area %s lacks %s: %v", area, n, got)
			}
		}
		for _, n := range got {
			if !slices.Contains(byArea[area], n) && !slices.Contains(defaultTools, n) {
				t.Errorf("area %s has %s", area, n)
			}
		}
	}
	if got := names(listTools(t, f, "env,volumes")); !slices.Equal(got, []string{"env_delete", "env_get", "env_list", "env_set", "volume_create", "volume_delete", "volume_get", "volume_list"}) {
		t.Errorf("env,volumes: %v", got)
	}
	if got := listTools(t, f, "default,env"); len(got) != len(defaultTools)+4 || got["env_set"] == nil {
		t.Errorf("default,env: %v", names(got))
	}
	for _, bad := range []string{"bogus", "default,", "ALL"} {
		if _, _, err := New(context.Background(), f, Options{Tools: bad}); errdefs.CodeOf(err) != errdefs.CodeMalformed || !strings.Contains(err.Error(), "unknown tool set") {
			t.Errorf("set %q: %v", bad, err)
		}
	}
}

// TestEveryToolHasHints: every tool says whether it reads, destroys, is
// idempotent and reaches outside hutch (the pointers are set), and no
// read-only tool destroys.
func TestEveryToolHasHints(t *testing.T) {
	all := listTools(t, &fake{}, "all")
	for name, tl := range all {
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s lacks annotations: %+v", name, a)
			continue
		}
		if a.ReadOnlyHint && *a.DestructiveHint {
			t.Errorf("%s reads only and destroys", name)
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", name)
		}
	}
	for _, name := range []string{"sandbox_stop", "volume_delete", "snapshot_delete", "file_remove", "process_kill"} {
		if !*all[name].Annotations.DestructiveHint {
			t.Errorf("%s is not destructive", name)
		}
	}
	for _, name := range []string{"git_clone", "git_push", "package_install", "file_upload_url"} {
		if !*all[name].Annotations.OpenWorldHint {
			t.Errorf("%s is not open-world", name)
		}
	}
	if a := all["env_list"].Annotations; !a.ReadOnlyHint || !a.IdempotentHint || *a.DestructiveHint {
		t.Errorf("env_list: %+v", a)
	}
}

// lastCall is the last function f was called with.
func (f *fake) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

// TestGeneratedTools: a generated tool calls its function with the
// agent's arguments, the session's sandbox standing for a sandbox_id
// left out; its result is the function's; a function's S-code error is
// a tool error.
func TestGeneratedTools(t *testing.T) {
	f := &fake{}
	cs, end := connectTools(t, f, "all", nil)
	defer end()
	ctx := context.Background()
	all := listTools(t, f, "all")
	schema, _ := json.Marshal(all["env_set"].InputSchema)
	if !strings.Contains(string(schema), `"required":["env"]`) || !strings.Contains(string(schema), sandboxArgDoc) {
		t.Errorf("env_set's schema: %s", schema)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env_set", Arguments: map[string]any{"env": map[string]string{"A": "1"}}})
	if err != nil || res.IsError {
		t.Fatalf("env_set: %+v %v", res, err)
	}
	if last := f.lastCall(); last != api.FnEnvSet+` {"env":{"A":"1"},"sandbox_id":"sb-1"}` {
		t.Errorf("env_set called %s", last)
	}
	if out, _ := json.Marshal(res.StructuredContent); string(out) != `{"function":"sandbox::env::set"}` {
		t.Errorf("env_set answered %s", out)
	}
	// A sandbox named is the one used; a function whose sandbox_id is
	// optional (a filter) gets none.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbox_pause", Arguments: map[string]any{"sandbox_id": "sb-9", "depth": "hibernate"}}); err != nil || res.IsError {
		t.Fatalf("sandbox_pause: %+v %v", res, err)
	}
	if last := f.lastCall(); last != api.FnPause+` {"depth":"hibernate","sandbox_id":"sb-9"}` {
		t.Errorf("sandbox_pause called %s", last)
	}
	// sandbox_create restores a snapshot (no image of its own) and mounts
	// volumes.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbox_create", Arguments: map[string]any{"snapshot_id": "snap-1",
		"volumes": []map[string]any{{"name": "v", "path": "/data"}}}}); err != nil || res.IsError {
		t.Fatalf("sandbox_create: %+v %v", res, err)
	}
	if last := f.lastCall(); !strings.HasPrefix(last, api.FnCreate+" ") || !strings.Contains(last, `"snapshot_id":"snap-1"`) || strings.Contains(last, `"image"`) ||
		!strings.Contains(last, `"volumes":[{"name":"v","path":"/data"}]`) {
		t.Errorf("sandbox_create called %s", last)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alert_list"}); err != nil || res.IsError {
		t.Fatalf("alert_list: %+v %v", res, err)
	}
	if last := f.lastCall(); last != api.FnAlertList+` {}` {
		t.Errorf("alert_list called %s", last)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "volume_delete", Arguments: map[string]any{"name": "v"}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "S262: volume v is mounted") {
		t.Errorf("volume_delete: %+v %v", res, err)
	}
	// A sandbox_id that is not a string is S001, before any call.
	n := len(f.calls)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "env_list", Arguments: map[string]any{"sandbox_id": 7}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "S001: ") || len(f.calls) != n {
		t.Errorf("env_list with a number: %+v %v", res, err)
	}
}

// TestStreamingTools: a streaming tool's events are progress; a
// collecting one answers its count of events, or what came within its
// wait; a bad count is S001.
func TestStreamingTools(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	f := &fake{stream: func(ctx context.Context, id string, on func(string, json.RawMessage) error) error {
		switch id {
		case api.FnInstall:
			for _, line := range []string{"Collecting six\n", "Installed\n"} {
				b, _ := json.Marshal(api.OutputChunk{Data: line})
				if err := on(api.EventStdout, b); err != nil {
					return err
				}
			}
		case api.FnEventsStream:
			if err := on(api.EventStreamOpen, json.RawMessage(`{"after":"0"}`)); err != nil {
				return err
			}
			for i := range 3 {
				if err := on("sandbox.created", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
					return err
				}
			}
			<-ctx.Done() // the stream does not end by itself
			return &api.ErrorEnvelope{Code: "S200", Message: "cancelled"}
		}
		return nil
	}}
	cs, end := connectTools(t, f, "all", func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, p.Message)
	})
	defer end()
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "package_install", Arguments: map[string]any{"manager": "pip", "packages": []string{"six"}}, Meta: mcp.Meta{"progressToken": "i"}})
	if err != nil || res.IsError {
		t.Fatalf("package_install: %+v %v", res, err)
	}
	progress := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(notes, "") }
	if !testutil.Poll(30*time.Second, func() bool { return progress() == "Collecting six\nInstalled\n" }) {
		t.Errorf("progress: %q", progress())
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "event_wait", Arguments: map[string]any{"count": 2, "type": "sandbox.*"}})
	if err != nil || res.IsError {
		t.Fatalf("event_wait: %+v %v", res, err)
	}
	if out, _ := json.Marshal(res.StructuredContent); string(out) != `{"events":[{"data":{"n":0},"type":"sandbox.created"},{"data":{"n":1},"type":"sandbox.created"}],"timed_out":false}` {
		t.Errorf("event_wait answered %s", out)
	}
	if last := f.lastCall(); last != api.FnEventsStream+` {"type":"sandbox.*"}` {
		t.Errorf("event_wait called %s", last)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "event_wait", Arguments: map[string]any{"count": 5, "wait_secs": 1}})
	if out, _ := json.Marshal(res.StructuredContent); err != nil || res.IsError || !strings.Contains(string(out), `{"data":{"n":2},"type":"sandbox.created"}],"timed_out":true}`) {
		t.Errorf("event_wait past its wait: %s %v", out, err)
	}
	for _, bad := range []any{0, api.MaxCollect + 1, "two"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "event_wait", Arguments: map[string]any{"count": bad}})
		if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "S001: count must be") {
			t.Errorf("count %v: %+v %v", bad, res, err)
		}
	}
}

// TestHTTPToolsQuery: /mcp?tools= chooses a session's set; an unknown
// one is answered S001 (400) before any session starts.
func TestHTTPToolsQuery(t *testing.T) {
	h, err := HTTPHandler(functions.New(functionstest.StubDeps()), Options{Tools: "default"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"?tools=bogus", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":"S001"`) || !strings.Contains(string(body), "unknown tool set") {
		t.Errorf("?tools=bogus: %d %s", resp.StatusCode, body)
	}
	for query, want := range map[string][]string{"?tools=volumes": {"volume_create", "volume_delete", "volume_get", "volume_list"}, "": defaultTools} {
		c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + query}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for tl, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tl.Name)
		}
		cs.Close()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q lists %v", query, got)
		}
	}
	if _, err := HTTPHandler(functions.New(functionstest.StubDeps()), Options{Tools: "nope"}); errdefs.CodeOf(err) != errdefs.CodeMalformed {
		t.Errorf("a bad default set: %v", err)
	}
}
