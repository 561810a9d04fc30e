// Package mcpserver is hutch's MCP server: tools an agent calls to run
// code and commands in a sandbox, move files and manage sandboxes, built
// with the official Go SDK. Every tool is a call of hutch's function
// table through a Backend: the table itself in the daemon (/mcp), the
// HTTP API in `hutch mcp` (stdio). The default set is written here
// (tools.go, git.go: schemas inferred from the Go types); every other
// tool is generated from a function the table offers as one
// (generated.go), its input the function's request schema.
//
// A session lists the tools of its set (Options.Tools: all, default, or
// areas), each with its annotations (read-only, destructive, idempotent,
// open world).
//
// A session has a default sandbox, created on the first tool call that
// needs one and names none, and stopped when the session ends, so an agent
// may leave sandbox_id out.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Backend calls functions of hutch's table for one owner.
type Backend interface {
	// Call runs function id with req and decodes its result into out.
	Call(ctx context.Context, id string, req, out any) error
	// Stream runs streaming function id with req, handing each event to
	// on, and decodes its final value into out.
	Stream(ctx context.Context, id string, req any, on func(event string, data json.RawMessage) error, out any) error
	// Functions describes the table's functions (engine::functions::list),
	// whose MCP tools the server offers.
	Functions(ctx context.Context) ([]api.FunctionInfo, error)
}

// Options configure a server.
type Options struct {
	// Version is reported to clients.
	Version string
	// DefaultImage is the image of a session's default sandbox (python
	// when empty).
	DefaultImage string
	// BaseURL is the daemon's URL as the agent's user reaches it, which
	// preview URLs begin with.
	BaseURL string
	// Tools is the tool set offered (api.ParseToolSet): "all", or
	// "default" and areas, comma separated; "" is "default".
	Tools  string
	Logger *slog.Logger
}

// Instructions tell the agent how to use the tools.
const Instructions = `hutch runs code in isolated sandboxes (gVisor). Tools act on a sandbox: give sandbox_id, or leave it out to use this session's default sandbox, created on first use (image python unless sandbox_create made another the default) and stopped when the session ends.
Run Python with run_code (state persists between calls: variables, imports); run shell commands with run_command. Files: file_read, file_write, file_list, file_search, file_edit.
The tools listed are this session's set; more, by area (sandboxes: pause, resume, renew; env; processes; snapshots; templates; events; metrics; alerts; networks; volumes; jobs; ...), come with hutch mcp --tools all or /mcp?tools=all.
Errors carry an S-code and a fix: S002 unknown sandbox (create one or omit sandbox_id), S004 sandbox stopped (create another), S005 paused (sandbox_resume), S100 image not allowed (use one from sandbox_create's list), S200 timeout (raise timeout_ms or run in the background), S211 no such file, S240 unknown context, S241 context died (the interpreter exited: run_code starts a fresh one after context restart), S400 capacity (stop a sandbox).`

// schemas keeps the tools' schemas, inferred once for every server.
var schemas = mcp.NewSchemaCache()

// session is one MCP session's state.
type session struct {
	b    Backend
	opts Options

	mu sync.Mutex
	// The fields below are guarded by mu.
	defaultID    string
	defaultImage string
}

// New returns a server whose tools call b, for one session; stop stops
// its default sandbox: call it once the session is over. An unknown tool
// set is S001.
func New(ctx context.Context, b Backend, opts Options) (srv *mcp.Server, stop func(), err error) {
	set, err := toolSet(opts.Tools)
	if err != nil {
		return nil, nil, err
	}
	fns, err := b.Functions(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the daemon's functions: %w", toolError(err))
	}
	generated, err := functionTools(fns)
	if err != nil {
		return nil, nil, err
	}
	srv, stop = newServer(b, opts, set, generated, false)
	return srv, stop, nil
}

// CheckTools checks a tool set (Options.Tools): an unknown one is S001.
func CheckTools(spec string) error {
	_, err := toolSet(spec)
	return err
}

// toolSet reads a tool set; an unknown one is S001.
func toolSet(spec string) (api.ToolSet, error) {
	set, err := api.ParseToolSet(spec)
	if err != nil {
		return set, errdefs.Malformed("%v", err)
	}
	return set, nil
}

// newServer is New over the tools of set, the written ones and those
// generated; with stopAtEnd, the default sandbox is stopped when the
// session that initialized the server ends.
func newServer(b Backend, opts Options, set api.ToolSet, generated []functionTool, stopAtEnd bool) (srv *mcp.Server, stop func()) {
	if opts.DefaultImage == "" {
		opts.DefaultImage = "python"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &session{b: b, opts: opts, defaultImage: opts.DefaultImage}
	so := &mcp.ServerOptions{Instructions: Instructions, Logger: opts.Logger, SchemaCache: schemas}
	if stopAtEnd {
		so.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			go func() {
				_ = req.Session.Wait()
				s.stopDefault()
			}()
		}
	}
	srv = mcp.NewServer(&mcp.Implementation{Name: "hutch", Title: "hutch sandboxes", Version: opts.Version}, so)
	s.register(adder{srv: srv, set: set})
	for _, ft := range generated {
		if set.Has(ft.tool.Area, ft.tool.Default) {
			srv.AddTool(ft.mcpTool(), s.handler(ft))
		}
	}
	return srv, s.stopDefault
}

// stopDefault stops the session's default sandbox, if it made one.
func (s *session) stopDefault() {
	s.mu.Lock()
	id := s.defaultID
	s.defaultID = ""
	s.mu.Unlock()
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out api.StopResponse
	if err := s.b.Call(ctx, api.FnStop, api.StopRequest{SandboxID: id}, &out); err != nil {
		s.opts.Logger.Info("stopping an MCP session's sandbox", "sandbox", id, "err", err)
	}
}

// sandbox is the sandbox a tool acts on: id, or the session's default,
// created on first use.
func (s *session) sandbox(ctx context.Context, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.defaultID != "" {
		return s.defaultID, nil
	}
	var out api.CreateResponse
	if err := s.b.Call(ctx, api.FnCreate, api.CreateRequest{Image: s.defaultImage, Name: "mcp-session"}, &out); err != nil {
		return "", err
	}
	s.defaultID = out.SandboxID
	return out.SandboxID, nil
}

// toolError is err as the agent reads it: the S-code, the message and the
// fix.
func toolError(err error) error {
	var env *api.ErrorEnvelope
	if !errors.As(err, &env) {
		var coded *errdefs.Error
		if !errors.As(err, &coded) {
			return err
		}
		e := envelope.From(err)
		env = &e
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", env.Code, env.Message)
	if env.FixNote != "" {
		fmt.Fprintf(&b, "\nfix: %s", env.FixNote)
	}
	if len(env.Fix) > 0 {
		fix, _ := json.Marshal(env.Fix)
		fmt.Fprintf(&b, "\nfix payload: %s", fix)
	}
	return errors.New(b.String())
}

func text(format string, args ...any) *mcp.TextContent {
	return &mcp.TextContent{Text: fmt.Sprintf(format, args...)}
}

func ptr[T any](v T) *T { return &v }

// hints are a tool's annotations, every hint set.
func hints(readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: ptr(destructive), IdempotentHint: idempotent, OpenWorldHint: ptr(openWorld)}
}

// adder adds the written tools of a set to a server.
type adder struct {
	srv *mcp.Server
	set api.ToolSet
}

// addTool adds a written tool of area (all are in the default set) when
// the set has it.
func addTool[In, Out any](a adder, area string, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if a.set.Has(area, true) {
		mcp.AddTool(a.srv, t, h)
	}
}
