package mcpserver

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
)

// Inputs of the tools: their JSON Schemas are inferred from these types,
// the descriptions from the jsonschema tags.

type sandboxArg struct {
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"the sandbox; omit for this session's default sandbox"`
}

// sandboxArgDoc is sandbox_id's description, in every tool's schema.
const sandboxArgDoc = "the sandbox; omit for this session's default sandbox"

type createIn struct {
	Image       string            `json:"image,omitempty" jsonschema:"catalog image: python (default), node, python-data, or the operator's own"`
	Network     bool              `json:"network,omitempty" jsonschema:"give the sandbox outbound network access"`
	Template    string            `json:"template,omitempty" jsonschema:"start from this template's defaults"`
	Runtime     string            `json:"runtime,omitempty" jsonschema:"isolation runtime: gvisor or microvm (the daemon's default when omitted)"`
	SnapshotID  string            `json:"snapshot_id,omitempty" jsonschema:"restore this snapshot (snapshot_list): the sandbox goes on from its memory, processes and files"`
	Volumes     []api.VolumeMount `json:"volumes,omitempty" jsonschema:"named volumes (volume_create) to mount: name, path, read_only"`
	MakeDefault bool              `json:"make_default,omitempty" jsonschema:"use it as this session's default sandbox from now on"`
}

type runCodeIn struct {
	sandboxArg
	Code      string `json:"code" jsonschema:"the code to run; the value of a last bare expression is returned"`
	Language  string `json:"language,omitempty" jsonschema:"python (default), javascript or bash"`
	ContextID string `json:"context_id,omitempty" jsonschema:"a context from an earlier result; omit for the sandbox's default context of the language"`
	TimeoutMs uint64 `json:"timeout_ms,omitempty" jsonschema:"interrupt the code after this many milliseconds"`
}

type runCommandIn struct {
	sandboxArg
	Command    string `json:"command" jsonschema:"a shell command line, run with sh -c"`
	Workdir    string `json:"workdir,omitempty" jsonschema:"absolute working directory"`
	TimeoutMs  uint64 `json:"timeout_ms,omitempty" jsonschema:"kill the command after this many milliseconds"`
	Background bool   `json:"background,omitempty" jsonschema:"start it in the background and return its pid at once (read it with process_output)"`
}

type pidIn struct {
	sandboxArg
	Pid int `json:"pid" jsonschema:"the pid run_command returned"`
}

type pathIn struct {
	sandboxArg
	Path string `json:"path" jsonschema:"absolute path in the sandbox"`
}

type writeIn struct {
	sandboxArg
	Path    string `json:"path" jsonschema:"absolute path in the sandbox; missing parent directories are made"`
	Content string `json:"content" jsonschema:"the file's content: text, or base64 with base64 true"`
	Base64  bool   `json:"base64,omitempty" jsonschema:"content is base64"`
}

type searchIn struct {
	sandboxArg
	Path       string `json:"path" jsonschema:"file or directory to search, recursively"`
	Pattern    string `json:"pattern" jsonschema:"a regular expression (Go syntax)"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
}

type editIn struct {
	sandboxArg
	Path    string `json:"path" jsonschema:"the file to edit"`
	Find    string `json:"find" jsonschema:"text to find, taken literally (regex true for a Go regular expression)"`
	Replace string `json:"replace" jsonschema:"replacement; with regex true $1 and ${name} expand groups"`
	Regex   bool   `json:"regex,omitempty"`
	First   bool   `json:"first_only,omitempty" jsonschema:"replace only the first match of each line"`
}

type uploadURLIn struct {
	sandboxArg
	URL  string `json:"url" jsonschema:"an http or https URL the sandbox fetches (it needs network: true)"`
	Path string `json:"path" jsonschema:"absolute path the file is written to"`
}

// fetchScript downloads $1 into $2 inside the sandbox, with curl or
// Python: the URL is an argument, never code.
const fetchScript = `if command -v curl >/dev/null 2>&1; then exec curl -fsSL -o "$2" -- "$1"; fi
exec python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"`

type exposeIn struct {
	sandboxArg
	Port   int  `json:"port" jsonschema:"the port a server listens on inside the sandbox (127.0.0.1 or 0.0.0.0)"`
	Public bool `json:"public,omitempty" jsonschema:"reachable without the owner's token, through a URL with a token of its own"`
}

type forkIn struct {
	sandboxArg
	Count int `json:"count,omitempty" jsonschema:"how many copies (default 1)"`
}

type noInput struct{}

// register adds the written tools of a's set, area by area.
func (s *session) register(a adder) {
	s.registerSandboxes(a)
	s.registerExec(a)
	s.registerFiles(a)
	s.registerPorts(a)
	s.registerSnapshots(a)
	s.registerGit(a)
}

// annotations are the hints of a tool that only reads, of one that
// destroys, and of one that changes without destroying, none of which
// reaches outside hutch.
func annotations() (readOnly, destructive, changes *mcp.ToolAnnotations) {
	return hints(true, false, true, false), hints(false, true, true, false), hints(false, false, false, false)
}

// registerSandboxes adds the tools that create, list and stop sandboxes.
func (s *session) registerSandboxes(a adder) {
	readOnly, destructive, changes := annotations()

	addTool(a, api.ToolAreaSandboxes, &mcp.Tool{Name: "sandbox_create", Description: "Create a sandbox and return its id (snapshot_id: restore a snapshot). Tools use this session's default sandbox when sandbox_id is omitted; make_default makes this one that default.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, api.CreateResponse, error) {
			if in.Image == "" && in.SnapshotID == "" {
				in.Image = s.opts.DefaultImage
			}
			var out api.CreateResponse
			if err := s.b.Call(ctx, api.FnCreate, api.CreateRequest{Image: in.Image, Network: in.Network, Template: in.Template, Runtime: in.Runtime, SnapshotID: in.SnapshotID, Volumes: in.Volumes, Name: "mcp"}, &out); err != nil {
				return nil, out, toolError(err)
			}
			if in.MakeDefault {
				s.mu.Lock()
				s.defaultImage = cmp.Or(out.Image, in.Image)
				if s.defaultID == "" {
					s.defaultID = out.SandboxID
				}
				s.mu.Unlock()
			}
			return nil, out, nil
		})
	addTool(a, api.ToolAreaSandboxes, &mcp.Tool{Name: "sandbox_list", Description: "List your sandboxes: id, image, state.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, api.ListResponse, error) {
			var out api.ListResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnList, api.ListRequest{}, &out))
		})
	addTool(a, api.ToolAreaSandboxes, &mcp.Tool{Name: "sandbox_stop", Description: "Stop a sandbox for good: its processes and files are gone.", Annotations: destructive},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sandboxArg) (*mcp.CallToolResult, api.StopResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.StopResponse{}, toolError(err)
			}
			var out api.StopResponse
			if err := s.b.Call(ctx, api.FnStop, api.StopRequest{SandboxID: id, Wait: true}, &out); err != nil {
				return nil, out, toolError(err)
			}
			s.mu.Lock()
			if s.defaultID == id {
				s.defaultID = ""
			}
			s.mu.Unlock()
			return nil, out, nil
		})
}

// registerExec adds the tools that run code and commands and follow
// background processes.
func (s *session) registerExec(a adder) {
	readOnly, destructive, changes := annotations()

	addTool(a, api.ToolAreaInterpreter, &mcp.Tool{Name: "run_code", Description: "Run code in a persistent interpreter (python by default; javascript, bash): variables, imports and the working directory persist between calls. Returns what it printed, the value of a last bare expression (as text, and images such as matplotlib figures as images), or the error with its traceback. On S241 the interpreter died: call again and it starts afresh.", Annotations: changes},
		s.runCode)
	addTool(a, api.ToolAreaExec, &mcp.Tool{Name: "run_command", Description: "Run a shell command (sh -c) and return its exit code and output; its output is sent as progress notifications while it runs. background: start it and return its pid at once.", Annotations: changes},
		s.runCommand)
	addTool(a, api.ToolAreaProcesses, &mcp.Tool{Name: "process_output", Description: "What a background process has written so far, and whether it still runs.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pidIn) (*mcp.CallToolResult, api.ProcessOutputResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.ProcessOutputResponse{}, toolError(err)
			}
			var out api.ProcessOutputResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnProcessOutput, api.ProcessOutputRequest{SandboxID: id, Pid: in.Pid}, &out))
		})
	addTool(a, api.ToolAreaProcesses, &mcp.Tool{Name: "process_kill", Description: "Kill a background process (and its group).", Annotations: destructive},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pidIn) (*mcp.CallToolResult, api.ProcessSignalResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.ProcessSignalResponse{}, toolError(err)
			}
			var out api.ProcessSignalResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnProcessKill, api.ProcessRequest{SandboxID: id, Pid: in.Pid}, &out))
		})
}

// registerFiles adds the tools that read, write, search and edit files.
func (s *session) registerFiles(a adder) {
	readOnly, _, changes := annotations()

	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_read", Description: "Read a file (up to 1 MiB): its text, or base64 when it is not UTF-8.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, api.FsReadResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.FsReadResponse{}, toolError(err)
			}
			var out api.FsReadResponse
			if err := s.b.Call(ctx, api.FnFsRead, api.FsReadRequest{SandboxID: id, Path: in.Path}, &out); err != nil {
				return nil, out, toolError(err)
			}
			if out.Body != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{text("%s", *out.Body)}}, out, nil
			}
			return nil, out, nil
		})
	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_write", Description: "Write a file (making missing parent directories); replaces it when it exists.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, api.FsWriteResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.FsWriteResponse{}, toolError(err)
			}
			req := api.FsWriteRequest{SandboxID: id, Path: in.Path, Parents: true, Content: &in.Content}
			if in.Base64 {
				req.Content, req.ContentB64 = nil, &in.Content
			}
			var out api.FsWriteResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnFsWrite, req, &out))
		})
	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_list", Description: "List a directory: names, types, sizes.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, api.FsLsResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.FsLsResponse{}, toolError(err)
			}
			var out api.FsLsResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnFsLs, api.FsLsRequest{SandboxID: id, Path: in.Path}, &out))
		})
	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_search", Description: "Search files for a regular expression: matching lines with their paths and line numbers.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, api.FsGrepResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.FsGrepResponse{}, toolError(err)
			}
			var out api.FsGrepResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnFsGrep, api.FsGrepRequest{SandboxID: id, Path: in.Path, Pattern: in.Pattern, IgnoreCase: in.IgnoreCase}, &out))
		})
	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_edit", Description: "Edit a file in place, sed-style: replace every match of find (literal unless regex) with replace; returns how many were replaced.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in editIn) (*mcp.CallToolResult, api.FsSedResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.FsSedResponse{}, toolError(err)
			}
			var out api.FsSedResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnFsSed, api.FsSedRequest{SandboxID: id, Files: []string{in.Path}, Pattern: in.Find,
				Replacement: in.Replace, Regex: &in.Regex, FirstOnly: in.First}, &out))
		})
	addTool(a, api.ToolAreaFiles, &mcp.Tool{Name: "file_upload_url", Description: "Download a URL into a file of the sandbox (the sandbox fetches it, so it needs network: true: sandbox_create with network). To write content you have, use file_write (base64 for binary).", Annotations: hints(false, false, false, true)},
		func(ctx context.Context, _ *mcp.CallToolRequest, in uploadURLIn) (*mcp.CallToolResult, commandResult, error) {
			if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, commandResult{}, fmt.Errorf("S001: url %q must be an http or https URL", in.URL)
			}
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, commandResult{}, toolError(err)
			}
			var res api.ExecResponse
			if err := s.b.Call(ctx, api.FnExecResult, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", fetchScript, "sh", in.URL, in.Path}}, &res); err != nil {
				return nil, commandResult{}, toolError(err)
			}
			out := commandResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stdout: res.Stdout, Stderr: res.Stderr}
			if res.ExitCode == nil || *res.ExitCode != 0 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("the download failed (does the sandbox have a network?): %s", res.Stderr)}}, out, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{text("wrote %s", in.Path)}}, out, nil
		})
}

// registerPorts adds the tool that exposes a port.
func (s *session) registerPorts(a adder) {
	_, _, changes := annotations()

	addTool(a, api.ToolAreaPorts, &mcp.Tool{Name: "expose_port", Description: "Make a server listening in the sandbox reachable: returns its preview URL (open it in a browser, or fetch it). Start the server first with run_command background: true.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in exposeIn) (*mcp.CallToolResult, api.PortInfo, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.PortInfo{}, toolError(err)
			}
			var out api.PortInfo
			if err := s.b.Call(ctx, api.FnPortExpose, api.PortExposeRequest{SandboxID: id, Port: in.Port, Public: in.Public}, &out); err != nil {
				return nil, out, toolError(err)
			}
			out.URL = s.opts.BaseURL + out.URL
			if out.HostURL != "" {
				return &mcp.CallToolResult{Content: []mcp.Content{text("%s\nby host name (for a browser): %s", out.URL, out.HostURL)}}, out, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{text("%s", out.URL)}}, out, nil
		})
}

// registerSnapshots adds the tools that snapshot and fork a sandbox.
func (s *session) registerSnapshots(a adder) {
	_, _, changes := annotations()

	addTool(a, api.ToolAreaSnapshots, &mcp.Tool{Name: "sandbox_snapshot", Description: "Snapshot a running sandbox (memory, processes and files); it goes on running. Restore it later with sandbox_create snapshot_id.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sandboxArg) (*mcp.CallToolResult, api.SnapshotInfo, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.SnapshotInfo{}, toolError(err)
			}
			var out api.SnapshotInfo
			return nil, out, toolError(s.b.Call(ctx, api.FnSnapshotCreate, api.SnapshotCreateRequest{SandboxID: id}, &out))
		})
	addTool(a, api.ToolAreaSnapshots, &mcp.Tool{Name: "sandbox_fork", Description: "Make running copies of a sandbox: each continues from the same memory and files, then diverges. Returns their ids.", Annotations: changes},
		func(ctx context.Context, _ *mcp.CallToolRequest, in forkIn) (*mcp.CallToolResult, api.ForkResponse, error) {
			id, err := s.sandbox(ctx, in.SandboxID)
			if err != nil {
				return nil, api.ForkResponse{}, toolError(err)
			}
			if in.Count == 0 {
				in.Count = 1
			}
			var out api.ForkResponse
			return nil, out, toolError(s.b.Call(ctx, api.FnFork, api.ForkRequest{SandboxID: id, Count: in.Count}, &out))
		})
}

// runCode is the run_code tool: the cell's output as text, its value as
// text and images, its error as a tool error with the traceback.
func (s *session) runCode(ctx context.Context, call *mcp.CallToolRequest, in runCodeIn) (*mcp.CallToolResult, api.CellResult, error) {
	req := api.RunCodeRequest{ContextID: in.ContextID, Language: in.Language, Code: in.Code, TimeoutMs: in.TimeoutMs}
	if in.ContextID == "" || in.SandboxID != "" {
		id, err := s.sandbox(ctx, in.SandboxID)
		if err != nil {
			return nil, api.CellResult{}, toolError(err)
		}
		req.SandboxID = id
	}
	var output strings.Builder
	var res api.CellResult
	p := progress{call: call}
	err := s.b.Stream(ctx, api.FnRunCode, req, func(event string, data json.RawMessage) error {
		var c api.OutputChunk
		if json.Unmarshal(data, &c) == nil && !c.Base64 {
			output.WriteString(c.Data)
			p.send(ctx, c.Data)
		}
		return nil
	}, &res)
	if err != nil {
		return nil, res, toolError(err)
	}
	var content []mcp.Content
	if output.Len() > 0 {
		content = append(content, text("%s", output.String()))
	}
	for _, bundle := range append(res.Display, res.Data) {
		content = append(content, bundleContent(bundle)...)
	}
	out := &mcp.CallToolResult{Content: content}
	if res.Error != nil {
		out.IsError = true
		out.Content = append(out.Content, text("%s: %s\n%s", res.Error.Name, res.Error.Value, strings.Join(res.Error.Traceback, "")))
	}
	if res.TimedOut {
		out.Content = append(out.Content, text("timed out: the code was interrupted; the interpreter keeps its state"))
	}
	if len(out.Content) == 0 {
		out.Content = []mcp.Content{text("(no output)")}
	}
	return out, res, nil
}

// bundleContent turns a MIME bundle into content: images as images, and
// the text form.
func bundleContent(bundle map[string]any) []mcp.Content {
	var out []mcp.Content
	mimes := make([]string, 0, len(bundle))
	for m := range bundle {
		mimes = append(mimes, m)
	}
	sort.Strings(mimes)
	for _, m := range mimes {
		if m != "image/png" && m != "image/jpeg" {
			continue
		}
		raw, _ := bundle[m].(string)
		if b, err := base64.StdEncoding.DecodeString(raw); err == nil {
			out = append(out, &mcp.ImageContent{Data: b, MIMEType: m})
		}
	}
	if t, ok := bundle["text/plain"].(string); ok {
		out = append(out, text("%s", t))
	}
	return out
}

// commandResult is run_command's structured result.
type commandResult struct {
	ExitCode *int   `json:"exit_code,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// Pid is a background command's process.
	Pid int `json:"pid,omitempty"`
}

// maxCommandOutput bounds the output run_command returns (the progress
// notifications carry all of it).
const maxCommandOutput = 256 << 10

// runCommand is the run_command tool: output as progress notifications
// while it runs (when the client asked for progress), then the result.
func (s *session) runCommand(ctx context.Context, call *mcp.CallToolRequest, in runCommandIn) (*mcp.CallToolResult, commandResult, error) {
	id, err := s.sandbox(ctx, in.SandboxID)
	if err != nil {
		return nil, commandResult{}, toolError(err)
	}
	argv := []string{"sh", "-c", in.Command}
	if in.Background {
		var st api.ProcessStartResponse
		if err := s.b.Call(ctx, api.FnProcessStart, api.ProcessStartRequest{SandboxID: id, Argv: argv, Workdir: in.Workdir, TimeoutMs: in.TimeoutMs, Tag: "mcp"}, &st); err != nil {
			return nil, commandResult{}, toolError(err)
		}
		return nil, commandResult{Pid: st.Pid}, nil
	}
	var stdout, stderr strings.Builder
	p := progress{call: call}
	var res api.ExecResponse
	err = s.b.Stream(ctx, api.FnExecStream, api.ExecRequest{SandboxID: id, Argv: argv, Workdir: in.Workdir, TimeoutMs: in.TimeoutMs},
		func(event string, data json.RawMessage) error {
			var c api.OutputChunk
			if (event != api.EventStdout && event != api.EventStderr) || json.Unmarshal(data, &c) != nil {
				return nil
			}
			c.Data = chunkText(c)
			w := &stdout
			if event == api.EventStderr {
				w = &stderr
			}
			if w.Len() < maxCommandOutput {
				w.WriteString(c.Data[:min(len(c.Data), maxCommandOutput-w.Len())])
			}
			p.send(ctx, c.Data)
			return nil
		}, &res)
	if err != nil {
		return nil, commandResult{}, toolError(err)
	}
	out := commandResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stdout: stdout.String(), Stderr: stderr.String()}
	summary := "timed out"
	if res.ExitCode != nil {
		summary = fmt.Sprintf("exit code %d", *res.ExitCode)
	}
	result := &mcp.CallToolResult{Content: []mcp.Content{text("%s\n%s%s", summary, out.Stdout, out.Stderr)}}
	result.IsError = res.ExitCode == nil || *res.ExitCode != 0
	return result, out, nil
}
