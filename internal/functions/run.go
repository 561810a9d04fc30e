package functions

// sandbox::run: one call that creates a sandbox, writes files and code into
// it, runs the code and stops the sandbox. It is a composition of the other
// functions and holds no sandbox logic of its own.

import (
	"context"
	"encoding/base64"
	"maps"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// runCodeDir is where sandbox::run writes the code, as run.<ext>.
const runCodeDir = "/tmp"

// runStopTimeout bounds the stop at the end of a run, which runs even when
// the caller has gone away.
const runStopTimeout = 30 * time.Second

// The steps of sandbox::run, named in the fix of a step failure.
const (
	stepCreate     = "create"
	stepWriteFiles = "write_files"
	stepWriteCode  = "write_code"
	stepExec       = "exec"
	stepStop       = "stop"
)

// interpreter is how one language runs: the program and the code file's
// extension.
type interpreter struct {
	program, ext string
}

// languages maps the lang names of the contract to their interpreters.
var languages = map[string]interpreter{
	"node":       {"node", "js"},
	"js":         {"node", "js"},
	"javascript": {"node", "js"},
	"python":     {"python3", "py"},
	"py":         {"python3", "py"},
	"shell":      {"/bin/sh", "sh"},
	"sh":         {"/bin/sh", "sh"},
	"bash":       {"/bin/sh", "sh"},
}

// resolveLang returns the interpreter of lang: a known language name (any
// case), else lang itself taken as an interpreter's path or name.
func resolveLang(lang string) (interpreter, error) {
	if in, ok := languages[strings.ToLower(lang)]; ok {
		return in, nil
	}
	switch {
	case lang == "":
		return interpreter{}, errdefs.Malformed("lang is required: node, python, shell, or an interpreter path")
	case strings.IndexFunc(lang, func(r rune) bool { return unicode.IsSpace(r) || r == 0 }) >= 0:
		return interpreter{}, errdefs.Malformed("lang %.64q is neither a known language (node, python, shell) nor an interpreter path: interpreter arguments are not supported", lang).
			WithFix(map[string]any{"lang": "shell"}, "use lang shell and call the interpreter from the script")
	}
	ext := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, path.Base(lang))
	if ext == "" {
		ext = "code"
	}
	return interpreter{program: lang, ext: ext}, nil
}

// checkRun validates what sandbox::run can check before it creates
// anything, so that bad input changes nothing. The image, env and limits
// are checked by sandbox::create, which creates nothing when they are bad.
func checkRun(req api.RunRequest) (interpreter, error) {
	in, err := resolveLang(req.Lang)
	if err != nil {
		return in, err
	}
	if req.Code == "" {
		return in, errdefs.Malformed("code is required")
	}
	for i, f := range req.Files {
		switch {
		case !path.IsAbs(f.Path):
			return in, errdefs.Malformed("files[%d].path %.256q must be an absolute path", i, f.Path)
		case strings.IndexByte(f.Path, 0) >= 0:
			return in, errdefs.Malformed("files[%d].path contains a NUL byte", i)
		case strings.HasSuffix(f.Path, "/") || path.Clean(f.Path) == "/":
			return in, errdefs.Malformed("files[%d].path %.256q names a directory, not a file", i, f.Path)
		}
	}
	if req.Stdin != "" {
		if _, err := base64.StdEncoding.DecodeString(req.Stdin); err != nil {
			return in, errdefs.Malformed("stdin is not valid base64: %v", err)
		}
	}
	return in, nil
}

// run is sandbox::run. A failing step returns its error's code with a fix
// naming the step, the sandbox and the inner code; the sandbox is stopped
// afterwards unless KeepSandbox, whether the run succeeded or not. A
// timeout of the code is S200, as through sandbox::exec.
func (t *Table) run(ctx context.Context, req api.RunRequest) (api.RunResponse, error) {
	in, err := checkRun(req)
	if err != nil {
		return api.RunResponse{}, err
	}
	created, err := t.deps.Sandboxes.Create(ctx, api.CreateRequest{Image: req.Image, Env: req.Env})
	if err != nil {
		return api.RunResponse{}, stepError(stepCreate, "", err)
	}
	id := created.SandboxID
	resp, step, err := t.runIn(ctx, id, in, req)
	if err != nil {
		err = stepError(step, id, err)
	}
	if req.KeepSandbox {
		resp.SandboxID = id
		return resp, err
	}
	// Stop even when the caller has gone away: nobody else knows the id.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runStopTimeout)
	defer cancel()
	if _, serr := t.deps.Sandboxes.Stop(stopCtx, api.StopRequest{SandboxID: id}); serr != nil && err == nil {
		return api.RunResponse{}, stepError(stepStop, id, serr)
	}
	return resp, err
}

// runIn runs the steps after create in sandbox id; on failure it names the
// step that failed.
func (t *Table) runIn(ctx context.Context, id string, in interpreter, req api.RunRequest) (api.RunResponse, string, error) {
	for _, f := range req.Files {
		if err := t.writeFile(ctx, id, f.Path, f.Content); err != nil {
			return api.RunResponse{}, stepWriteFiles, err
		}
	}
	codePath := runCodeDir + "/run." + in.ext
	if err := t.writeFile(ctx, id, codePath, req.Code); err != nil {
		return api.RunResponse{}, stepWriteCode, err
	}
	out, err := t.deps.Sandboxes.Exec(ctx, api.ExecRequest{
		SandboxID: id,
		Argv:      []string{in.program, codePath},
		Stdin:     req.Stdin,
		TimeoutMs: req.TimeoutMs,
	})
	if err == nil {
		err = timeoutError(out)
	}
	if err != nil {
		return api.RunResponse{}, stepExec, err
	}
	return api.RunResponse{ExecResponse: out}, "", nil
}

// writeFile writes content to the file p of sandbox id with mode 0644,
// creating missing parents, through sandbox::fs::write.
func (t *Table) writeFile(ctx context.Context, id, p, content string) error {
	fs, err := t.fs()
	if err != nil {
		return err
	}
	_, err = fs.WriteFile(ctx, api.FsWriteRequest{SandboxID: id, Path: p, Mode: "0644", Parents: true, Content: &content})
	return err
}

// stepError is the error of a failed run step: the inner error's code and
// message, prefixed with the step, and a fix that keeps the inner fix and
// adds the step's context, the sandbox id (when there is one) and the
// inner code.
func stepError(step, id string, err error) error {
	inner := errdefs.As(err)
	fix := maps.Clone(inner.Fix)
	if fix == nil {
		fix = map[string]any{}
	}
	fix["context"] = "during sandbox::run step " + step
	fix["inner_code"] = string(inner.Code)
	if id != "" {
		fix["sandbox_id"] = id
	}
	return &errdefs.Error{
		Code:    inner.Code,
		Message: "sandbox::run step " + step + ": " + inner.Error(),
		Fix:     fix,
		FixNote: inner.FixNote,
		Err:     err,
	}
}
