package codeinterp

// POST /execute: a cell, with its env_vars set for it alone, streamed as
// NDJSON lines as E2B's SDK reads them. Each line is written as the cell makes it and flushed; a client
// that does not take a line within WriteTimeout is cut off, and one that
// goes away ends the call (the cell is interrupted). The stream holds at
// most one event ahead of the client (functions.Stream), so nothing
// piles up in the daemon.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// executeRequest is the body of POST /execute.
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// mimeFields are the result fields of E2B's SDK, by MIME type.
var mimeFields = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
}

func (s *server) execute(w http.ResponseWriter, r *http.Request) {
	var in executeRequest
	if err := decode(w, r, &in); err != nil {
		writeError(w, err)
		return
	}
	req, err := s.runRequest(r, in)
	if err != nil {
		writeError(w, err)
		return
	}
	s.computing(w)
	res, err := functions.Invoke(r.Context(), s.t, api.FnRunCode, req)
	if err != nil {
		s.answer(w, 0, nil, err)
		return
	}
	st := res.(*functions.Stream)
	defer st.Close()
	out := &lineWriter{w: w, rc: http.NewResponseController(w), timeout: s.opts.WriteTimeout}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = out.rc.Flush()
	for {
		ev, err := st.Next(r.Context())
		if err == io.EOF {
			out.cell(st.Result().(api.CellResult))
			return
		}
		if err != nil {
			if r.Context().Err() == nil {
				env := envelope.From(err)
				out.line(map[string]any{"type": "error", "name": env.Code, "value": env.Message, "traceback": ""})
				out.line(map[string]any{"type": "end_of_execution"})
			}
			return
		}
		if chunk, ok := ev.Data.(api.OutputChunk); ok && (ev.Type == api.EventStdout || ev.Type == api.EventStderr) {
			out.line(map[string]any{"type": ev.Type, "text": chunkText(chunk), "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
		}
		if out.err != nil {
			return // the client is gone or too slow: Close ends the cell
		}
	}
}

// runRequest maps /execute's body onto sandbox::interpreter::run, after
// checking that the sandbox exists and has the context named.
func (s *server) runRequest(r *http.Request, in executeRequest) (api.RunCodeRequest, error) {
	req := api.RunCodeRequest{SandboxID: sandboxOf(r), ContextID: in.ContextID, Code: in.Code, TimeoutMs: math.MaxUint64}
	for _, k := range slices.Sorted(maps.Keys(in.EnvVars)) { // for this cell only
		req.Env = append(req.Env, k+"="+in.EnvVars[k])
	}
	if in.ContextID == "" {
		lang, err := language(in.Language)
		if err != nil {
			return req, err
		}
		req.Language = lang
	}
	cs, err := s.contexts(r.Context(), req.SandboxID)
	if err == nil && in.ContextID != "" && !slices.ContainsFunc(cs, func(c api.ContextInfo) bool { return c.ContextID == in.ContextID }) {
		err = errdefs.New(errdefs.CodeNoContext, "sandbox %s has no context %s", req.SandboxID, safetext.Clip(in.ContextID, 64))
	}
	return req, err
}

// chunkText is an output chunk's bytes as text.
func chunkText(c api.OutputChunk) string {
	if !c.Base64 {
		return c.Data
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return c.Data
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// lineWriter writes NDJSON lines, each flushed and bounded by timeout;
// after a failed write it writes nothing more.
type lineWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	err     error
}

func (l *lineWriter) line(v any) {
	if l.err != nil {
		return
	}
	l.buf.Reset()
	enc := json.NewEncoder(&l.buf)
	enc.SetEscapeHTML(false)
	if l.err = enc.Encode(v); l.err != nil {
		return
	}
	if l.timeout > 0 {
		_ = l.rc.SetWriteDeadline(time.Now().Add(l.timeout))
	}
	if _, l.err = l.w.Write(l.buf.Bytes()); l.err == nil {
		l.err = l.rc.Flush()
		if errors.Is(l.err, http.ErrNotSupported) {
			l.err = nil
		}
	}
}

// cell writes a finished cell: its displayed outputs, its value, its
// error, its execution count and the end.
func (l *lineWriter) cell(res api.CellResult) {
	for _, d := range res.Display {
		l.line(resultLine(d, false))
	}
	if len(res.Data) > 0 {
		l.line(resultLine(res.Data, true))
	}
	switch {
	case res.Error != nil:
		l.line(map[string]any{"type": "error", "name": res.Error.Name, "value": res.Error.Value,
			"traceback": traceback(res.Error.Traceback)})
	case res.TimedOut:
		l.line(map[string]any{"type": "error", "name": "TimeoutError", "value": "the cell ran past the daemon's max_exec_timeout_ms and was interrupted", "traceback": ""})
	}
	l.line(map[string]any{"type": "number_of_executions", "execution_count": res.ExecutionCount})
	l.line(map[string]any{"type": "end_of_execution"})
}

// resultLine is a result line of data (values by MIME type).
func resultLine(data map[string]any, main bool) map[string]any {
	line := map[string]any{"type": "result", "is_main_result": main}
	for mime, v := range data {
		if field, ok := mimeFields[mime]; ok {
			line[field] = v
		}
	}
	return line
}

// traceback joins a traceback's lines into E2B's one string; a line may
// end in its newline already (Python's) or not (JavaScript's).
func traceback(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
