package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// The MCP server (issue 21) with the Go SDK's client: over the daemon's
// streamable HTTP at /mcp and over `hutch mcp`'s stdio.

// mcpSession connects an MCP client through t; progress gets each
// progress notification's message.
func mcpSession(t *testing.T, tr mcp.Transport, progress func(string)) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "hutch-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				progress(r.Params.Message)
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// callTool calls a tool and returns its text content, joined.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, strings.Join(texts, "\n")
}

func TestMCPOverHTTP(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	var mu sync.Mutex
	var progress []string
	cs := mcpSession(t, &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp"}, func(m string) {
		mu.Lock()
		progress = append(progress, m)
		mu.Unlock()
	})
	if _, out := callTool(t, cs, "run_code", map[string]any{"code": "x = 6\nx * 7"}, nil); !strings.Contains(out, "42") {
		t.Fatalf("run_code: %q", out)
	}
	// A command of three seconds sends its output as progress before its
	// result.
	res, out := callTool(t, cs, "run_command", map[string]any{"command": "for i in 1 2 3; do echo tick $i; sleep 1; done"}, mcp.Meta{"progressToken": "t1"})
	mu.Lock()
	got := strings.Join(progress, "")
	mu.Unlock()
	if res.IsError || !strings.Contains(out, "exit code 0") || got != "tick 1\ntick 2\ntick 3\n" {
		t.Fatalf("run_command: %q, progress %q", out, got)
	}
	callTool(t, cs, "file_write", map[string]any{"path": "/tmp/notes/a.txt", "content": "hello mcp"}, nil)
	if _, out := callTool(t, cs, "file_read", map[string]any{"path": "/tmp/notes/a.txt"}, nil); out != "hello mcp" {
		t.Fatalf("file_read: %q", out)
	}
	// A server started in the background, exposed: its URL answers.
	callTool(t, cs, "run_command", map[string]any{"command": "cd /tmp && python3 -m http.server 8000 --bind 127.0.0.1", "background": true}, nil)
	res, url := callTool(t, cs, "expose_port", map[string]any{"port": 8000}, nil)
	if res.IsError || !strings.HasPrefix(url, d.url+"/v1/sandboxes/") {
		t.Fatalf("expose_port: %q", url)
	}
	var page string
	if !testutil.Poll(30*time.Second, func() bool {
		resp, err := http.Get(url + "notes/a.txt")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
		return resp.StatusCode == 200
	}) || page != "hello mcp" {
		t.Fatalf("the preview URL answered %q", page)
	}
	res, out = callTool(t, cs, "file_read", map[string]any{"path": "/nope/missing"}, nil)
	if !res.IsError || !strings.Contains(out, "S211") {
		t.Errorf("reading a missing file: %v %q", res.IsError, out)
	}
	// The session's default sandbox is stopped when the session ends.
	list, err := d.c.List(context.Background())
	if err != nil || len(list.Sandboxes) != 1 {
		t.Fatalf("sandboxes %+v %v", list, err)
	}
	cs.Close()
	if !testutil.Poll(30*time.Second, func() bool { return sandboxState(t, d, list.Sandboxes[0].SandboxID).Stopped }) {
		t.Error("the session's sandbox outlived the session")
	}
}

func TestMCPOverStdio(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	hutch, _ := binaries(t)
	cmd := exec.Command(hutch, "mcp")
	cmd.Env = append(os.Environ(), "HUTCH_URL="+d.url)
	cs := mcpSession(t, &mcp.CommandTransport{Command: cmd}, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools %v %v", tools, err)
	}
	if _, out := callTool(t, cs, "run_code", map[string]any{"code": "import sys\nsys.version_info[0]"}, nil); !strings.Contains(out, "3") {
		t.Fatalf("run_code: %q", out)
	}
	cs.Close()
	list, _ := d.c.List(context.Background())
	if !testutil.Poll(30*time.Second, func() bool {
		return len(list.Sandboxes) == 1 && sandboxState(t, d, list.Sandboxes[0].SandboxID).Stopped
	}) {
		t.Error("hutch mcp's sandbox outlived it")
	}
}
