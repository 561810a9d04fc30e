package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fake answers the functions the tools call, recording them.
type fake struct {
	mu    sync.Mutex
	calls []string
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
	}
	return recode(struct{}{}, out)
}

func (f *fake) Stream(_ context.Context, id string, req any, on func(string, json.RawMessage) error, out any) error {
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
	return nil
}

// connect runs a server over b and returns a client session of it.
func connect(t *testing.T, b Backend, progress func(*mcp.ProgressNotificationParams)) (*mcp.ClientSession, func()) {
	t.Helper()
	srv, stop := New(b, Options{Version: "test"})
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
