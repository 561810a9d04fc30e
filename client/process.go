package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutch-dev/hutch/api"
)

// ExecStream runs a command like Exec but hands its output to on as it is
// written: events api.EventStart (an api.ProcessStartResponse),
// api.EventStdout and api.EventStderr (an api.OutputChunk) and api.EventExit
// (the result, also returned). Output is not capped; cancelling ctx kills
// the command.
func (c *Client) ExecStream(ctx context.Context, req api.ExecRequest, on func(event string, data json.RawMessage) error) (api.ExecResponse, error) {
	var out api.ExecResponse
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return out, err
	}
	return out, c.streamEvents(ctx, http.MethodPost, p+"/exec?stream=true", req, on, &out)
}

// processPath is the path of process pid of sandbox id.
func processPath(id string, pid int) (string, error) {
	p, err := sandboxPath(id)
	if err != nil {
		return "", err
	}
	return p + "/processes/" + strconv.Itoa(pid), nil
}

// StartProcess starts a background process (sandbox::process::start).
func (c *Client) StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error) {
	var out api.ProcessStartResponse
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/processes", req, &out)
}

// GetProcess describes a process hutch started (sandbox::process::get).
func (c *Client) GetProcess(ctx context.Context, id string, pid int) (api.ProcessInfo, error) {
	var out api.ProcessInfo
	p, err := processPath(id, pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}

// ListProcesses lists every process of a sandbox (sandbox::process::list).
func (c *Client) ListProcesses(ctx context.Context, id string) (api.ProcessListResponse, error) {
	var out api.ProcessListResponse
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p+"/processes", nil, &out)
}

// outputPath is the output route of req's process with its offsets.
func outputPath(req api.ProcessOutputRequest) (string, error) {
	p, err := processPath(req.SandboxID, req.Pid)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	q.Set("stdout_offset", strconv.FormatInt(req.StdoutOffset, 10))
	q.Set("stderr_offset", strconv.FormatInt(req.StderrOffset, 10))
	if req.Follow {
		q.Set("follow", "true")
	}
	return p + "/output?" + q.Encode(), nil
}

// ProcessOutput reads what a process has written from the offsets in req
// (sandbox::process::output without follow).
func (c *Client) ProcessOutput(ctx context.Context, req api.ProcessOutputRequest) (api.ProcessOutputResponse, error) {
	var out api.ProcessOutputResponse
	req.Follow = false
	p, err := outputPath(req)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}

// FollowProcess hands a process's output from the offsets in req to on as
// it is written (events api.EventStdout, api.EventStderr, then
// api.EventExit) and returns the process's end.
func (c *Client) FollowProcess(ctx context.Context, req api.ProcessOutputRequest, on func(event string, data json.RawMessage) error) (api.ProcessInfo, error) {
	var out api.ProcessInfo
	req.Follow = true
	p, err := outputPath(req)
	if err != nil {
		return out, err
	}
	return out, c.streamEvents(ctx, http.MethodGet, p, nil, on, &out)
}

// WriteStdin writes to (or closes) a process's stdin (sandbox::process::stdin).
func (c *Client) WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error) {
	var out api.ProcessStdinResponse
	p, err := processPath(req.SandboxID, req.Pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/stdin", req, &out)
}

// SignalProcess sends a signal to a process's group (sandbox::process::signal).
func (c *Client) SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error) {
	var out api.ProcessSignalResponse
	p, err := processPath(req.SandboxID, req.Pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/signal", req, &out)
}

// KillProcess kills a process's group (sandbox::process::kill).
func (c *Client) KillProcess(ctx context.Context, id string, pid int) (api.ProcessSignalResponse, error) {
	var out api.ProcessSignalResponse
	p, err := processPath(id, pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodDelete, p, nil, &out)
}

// WaitProcess waits up to req.TimeoutMs for a process to exit and returns
// its state (sandbox::process::wait).
func (c *Client) WaitProcess(ctx context.Context, req api.ProcessWaitRequest) (api.ProcessInfo, error) {
	var out api.ProcessInfo
	p, err := processPath(req.SandboxID, req.Pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/wait", req, &out)
}

// ResizeProcess changes a PTY process's terminal size (sandbox::process::resize).
func (c *Client) ResizeProcess(ctx context.Context, req api.ProcessResizeRequest) (api.ProcessResizeResponse, error) {
	var out api.ProcessResizeResponse
	p, err := processPath(req.SandboxID, req.Pid)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/resize", req, &out)
}

// Logs hands the output of a sandbox's background processes to on as log
// lines (event api.EventLog with an api.LogLine; api.EventExit with an
// api.ProcessInfo when a followed process ends) — sandbox::process::logs.
func (c *Client) Logs(ctx context.Context, req api.LogsRequest, on func(event string, data json.RawMessage) error) error {
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return err
	}
	q := url.Values{}
	if req.Follow {
		q.Set("follow", "true")
	}
	if req.Tag != "" {
		q.Set("tag", req.Tag)
	}
	return c.streamEvents(ctx, http.MethodGet, p+"/logs?"+q.Encode(), nil, on, nil)
}
