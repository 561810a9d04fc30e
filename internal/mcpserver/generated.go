package mcpserver

// Tools generated from the function table: every function whose
// registration offers it as a tool (its api.Tool, internal/functions
// tools.go) is one, with the function's request schema as its input, the
// function's result as its result, and its events as progress. Nothing
// here names a function.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// The inputs a collecting tool adds to its function's request.
const (
	countArg = "count"
	waitArg  = "wait_secs"
	// defaultWait and maxWait bound a collecting tool's wait.
	defaultWait = 30
	maxWait     = 300
)

// functionTool is a function offered as a tool.
type functionTool struct {
	fn      string
	tool    api.Tool
	streams bool
	// fillsSandbox: the request requires sandbox_id, which the session's
	// default sandbox stands for when the agent leaves it out.
	fillsSandbox bool
	schema       map[string]any
}

// functionTools reads the tools of fns (the table's descriptions), in
// the order of their areas, then by name. A tool whose schema cannot be
// read is left out; two tools of one name are an error of the table.
func functionTools(fns []api.FunctionInfo) ([]functionTool, error) {
	var out []functionTool
	for _, f := range fns {
		raw, ok := f.Metadata[api.MetadataTool]
		if !ok {
			continue
		}
		var t api.Tool
		if err := recode(raw, &t); err != nil || t.Name == "" {
			return nil, fmt.Errorf("function %s: unreadable MCP tool: %v", f.FunctionID, err)
		}
		var schema map[string]any
		if err := json.Unmarshal(f.RequestFormat, &schema); err != nil || schema["type"] != "object" {
			return nil, fmt.Errorf("function %s: its request schema is not an object", f.FunctionID)
		}
		streams, _ := f.Metadata["streams"].(bool)
		ft := functionTool{fn: f.FunctionID, tool: t, streams: streams, schema: schema}
		ft.fillsSandbox = ft.makeSandboxOptional()
		if t.Collect > 0 {
			if err := ft.addCollectArgs(); err != nil {
				return nil, err
			}
		}
		out = append(out, ft)
	}
	slices.SortFunc(out, func(a, b functionTool) int {
		if d := slices.Index(api.ToolAreas, a.tool.Area) - slices.Index(api.ToolAreas, b.tool.Area); d != 0 {
			return d
		}
		return cmp.Compare(a.tool.Name, b.tool.Name)
	})
	for i := 1; i < len(out); i++ {
		if out[i].tool.Name == out[i-1].tool.Name {
			return nil, fmt.Errorf("two functions are the MCP tool %s", out[i].tool.Name)
		}
	}
	return out, nil
}

// makeSandboxOptional drops sandbox_id from the required properties,
// saying that it defaults to the session's sandbox, and reports whether
// it was required.
func (ft *functionTool) makeSandboxOptional() bool {
	props, _ := ft.schema["properties"].(map[string]any)
	req, _ := ft.schema["required"].([]any)
	i := slices.Index(req, any("sandbox_id"))
	if props == nil || i < 0 {
		return false
	}
	ft.schema["required"] = slices.Delete(slices.Clone(req), i, i+1)
	if p, ok := props["sandbox_id"].(map[string]any); ok {
		p["description"] = sandboxArgDoc
	}
	return true
}

// addCollectArgs adds count and wait_secs to a collecting tool's input.
func (ft *functionTool) addCollectArgs() error {
	props, _ := ft.schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		ft.schema["properties"] = props
	}
	if props[countArg] != nil || props[waitArg] != nil {
		return fmt.Errorf("function %s: its request has %s or %s, which its tool adds", ft.fn, countArg, waitArg)
	}
	props[countArg] = map[string]any{"type": "integer", "minimum": 1, "maximum": api.MaxCollect,
		"description": fmt.Sprintf("how many to answer (%d by default)", ft.tool.Collect)}
	props[waitArg] = map[string]any{"type": "integer", "minimum": 1, "maximum": maxWait,
		"description": fmt.Sprintf("the most seconds to wait (%d by default); what came by then is answered", defaultWait)}
	return nil
}

// mcpTool is ft as the SDK lists it.
func (ft functionTool) mcpTool() *mcp.Tool {
	t := ft.tool
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: ft.schema,
		Annotations: hints(t.ReadOnly, t.Destructive, t.Idempotent, t.OpenWorld)}
}

// collected is a collecting tool's result.
type collected struct {
	Events   []collectedEvent `json:"events"`
	TimedOut bool             `json:"timed_out"`
}

type collectedEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// errEnough ends a collecting tool's stream once it has its count.
var errEnough = errors.New("collected enough events")

// handler is ft's tool handler: the agent's arguments as the function's
// request, its events as progress, its result as the tool's.
func (s *session) handler(ft functionTool) mcp.ToolHandler {
	return func(ctx context.Context, call *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]json.RawMessage{}
		if raw := bytes.TrimSpace(call.Params.Arguments); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &args); err != nil {
				return errorResult(errdefs.Malformed("malformed arguments: %v", err)), nil
			}
		}
		if ft.fillsSandbox {
			var given string
			if raw, ok := args["sandbox_id"]; ok {
				if err := json.Unmarshal(raw, &given); err != nil {
					return errorResult(errdefs.Malformed("sandbox_id must be a string")), nil
				}
			}
			id, err := s.sandbox(ctx, given)
			if err != nil {
				return errorResult(err), nil
			}
			args["sandbox_id"], _ = json.Marshal(id)
		}
		var count, wait int
		if ft.tool.Collect > 0 {
			var err error
			if count, err = intArg(args, countArg, ft.tool.Collect, api.MaxCollect); err != nil {
				return errorResult(err), nil
			}
			if wait, err = intArg(args, waitArg, defaultWait, maxWait); err != nil {
				return errorResult(err), nil
			}
		}
		payload, err := json.Marshal(args)
		if err != nil {
			return errorResult(err), nil
		}
		var out json.RawMessage
		switch {
		case ft.tool.Collect > 0:
			res, err := s.collect(ctx, call, ft.fn, payload, count, time.Duration(wait)*time.Second)
			if err != nil {
				return errorResult(err), nil
			}
			out, _ = json.Marshal(res)
		case ft.streams:
			p := progress{call: call}
			err = s.b.Stream(ctx, ft.fn, json.RawMessage(payload), func(event string, data json.RawMessage) error {
				if event != api.EventStreamOpen {
					p.send(ctx, eventText(event, data))
				}
				return nil
			}, &out)
		default:
			err = s.b.Call(ctx, ft.fn, json.RawMessage(payload), &out)
		}
		if err != nil {
			return errorResult(err), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{text("%s", out)}, StructuredContent: out}, nil
	}
}

// collect runs a stream that does not end by itself until it gave count
// events (its open event is none) or wait passed, sending each as
// progress.
func (s *session) collect(ctx context.Context, call *mcp.CallToolRequest, fn string, payload []byte, count int, wait time.Duration) (collected, error) {
	res := collected{Events: []collectedEvent{}}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	p := progress{call: call}
	var ignored json.RawMessage
	err := s.b.Stream(wctx, fn, json.RawMessage(payload), func(event string, data json.RawMessage) error {
		if event == api.EventStreamOpen {
			return nil // the stream's start, not one of its events
		}
		res.Events = append(res.Events, collectedEvent{Type: event, Data: data})
		p.send(ctx, eventText(event, data))
		if len(res.Events) >= count {
			return errEnough
		}
		return nil
	}, &ignored)
	switch {
	case errors.Is(err, errEnough), err == nil:
		return res, nil
	case wctx.Err() != nil && ctx.Err() == nil:
		res.TimedOut = true
		return res, nil
	}
	return res, err
}

// intArg takes the integer argument name out of args: def when absent,
// else between 1 and most.
func intArg(args map[string]json.RawMessage, name string, def, most int) (int, error) {
	raw, ok := args[name]
	delete(args, name)
	if !ok {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > most {
		return 0, errdefs.Malformed("%s must be an integer from 1 to %d, got %s", name, most, raw)
	}
	return n, nil
}

// progress sends a call's progress notifications, when its client asked
// for them (a progress token).
type progress struct {
	call *mcp.CallToolRequest
	n    int
}

func (p *progress) send(ctx context.Context, message string) {
	token := p.call.Params.GetProgressToken()
	if token == nil {
		return
	}
	p.n++
	_ = p.call.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(p.n), Message: message})
}

// eventText is an event as a progress message: an output chunk's text
// (bytes that are not UTF-8 replaced), any other event as its type and
// data.
func eventText(event string, data json.RawMessage) string {
	if event == api.EventStdout || event == api.EventStderr {
		var c api.OutputChunk
		if json.Unmarshal(data, &c) == nil {
			return chunkText(c)
		}
	}
	return fmt.Sprintf("%s %s", event, data)
}

// chunkText is an output chunk's text; bytes that are not UTF-8 become
// U+FFFD.
func chunkText(c api.OutputChunk) string {
	if !c.Base64 {
		return c.Data
	}
	b, _ := base64.StdEncoding.DecodeString(c.Data)
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// errorResult is err as a tool's failed result.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("%s", toolError(err))}}
}
