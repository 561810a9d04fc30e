// Package interp holds the kernels of hutch's code interpreter — small
// programs that run in a sandbox as a background process and run cells of
// code, one after another, in one interpreter whose state outlives them —
// and the host's side of their protocol: how a cell is written to a
// kernel's stdin, and how its result is found in the kernel's stdout.
//
// A kernel answers each cell with a line "\x1e" NONCE " " ID "\n" on stderr
// (the end of the cell's stderr: the two streams arrive apart) and then a
// line "\x1e" NONCE " " JSON "\n" on stdout, both after the cell's own
// output; NONCE is random per context and given to
// the kernel in its environment (HUTCH_INTERP_NONCE), which the kernel
// drops before any cell runs. Everything a kernel writes is the sandbox's:
// the splitter bounds what it holds, and a result that does not decode is
// an error of the cell, not of the daemon.
package interp

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed kernel.py
var pythonKernel string

//go:embed kernel.js
var nodeKernel string

//go:embed kernel.sh
var bashKernel string

// Languages.
const (
	Python     = "python"
	JavaScript = "javascript"
	Bash       = "bash"
	// TypeScript runs in the JavaScript kernel, each cell transpiled by
	// what the image carries (issue 40): node's own type stripping, or the
	// typescript package (npm's or Debian's node-typescript).
	TypeScript = "typescript"
)

// TypeScriptEnv tells the JavaScript kernel its cells are TypeScript.
const TypeScriptEnv = "HUTCH_INTERP_TYPESCRIPT"

// NonceEnv carries a context's nonce to its kernel.
const NonceEnv = "HUTCH_INTERP_NONCE"

// Kernel is how a language's contexts run: Interpreter runs the program
// Source from a file named File, which the caller writes first (Argv), so
// that a kernel shows in a process list as a short command that names it
// ("python3 -u /tmp/hutch-kernel.py"), not as its whole source.
type Kernel struct {
	Language string
	// Interpreter is the program that runs the kernel, and its options.
	Interpreter []string
	// File is the kernel's file name and Source its content.
	File   string
	Source string
	// Env is added to the context's environment.
	Env []string
	// Request encodes cell id with code, and the variables env
	// ("KEY=VALUE") set for that cell only, as one line of the kernel's
	// stdin.
	Request func(id uint64, code string, env []string) []byte
}

// KernelOf returns the kernel of language, false for an unknown one.
func KernelOf(language string) (Kernel, bool) {
	switch language {
	case Python:
		return Kernel{Language: Python, Interpreter: []string{"python3", "-u"}, File: "hutch-kernel.py", Source: pythonKernel,
			Env: []string{"MPLBACKEND=Agg", "PYTHONUNBUFFERED=1"}, Request: jsonRequest}, true
	case JavaScript:
		return Kernel{Language: JavaScript, Interpreter: []string{"node"}, File: "hutch-kernel.js", Source: nodeKernel,
			Request: jsonRequest}, true
	case TypeScript:
		return Kernel{Language: TypeScript, Interpreter: []string{"node"}, File: "hutch-kernel.js", Source: nodeKernel,
			Env: []string{TypeScriptEnv + "=1"}, Request: jsonRequest}, true
	case Bash:
		return Kernel{Language: Bash, Interpreter: []string{"bash", "--noprofile", "--norc"}, File: "hutch-kernel.sh", Source: bashKernel,
			Request: bashRequest}, true
	}
	return Kernel{}, false
}

// Path is the kernel's file in directory dir (a path of the sandbox).
func (k Kernel) Path(dir string) string { return path.Join(dir, k.File) }

// Argv is the command that runs the kernel from its file in dir.
func (k Kernel) Argv(dir string) []string {
	return append(slices.Clone(k.Interpreter), k.Path(dir))
}

// Languages lists the languages, for messages.
var Languages = []string{Python, JavaScript, Bash, TypeScript}

func jsonRequest(id uint64, code string, env []string) []byte {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	b, _ := json.Marshal(struct {
		ID   uint64            `json:"id"`
		Code string            `json:"code"`
		Env  map[string]string `json:"env,omitempty"`
	}{id, code, vars}) // numbers and strings always encode
	return append(b, '\n')
}

// bashRequest is "ID BASE64(code)", then " BASE64(KEY=VALUE)" per variable.
func bashRequest(id uint64, code string, env []string) []byte {
	line := strconv.FormatUint(id, 10) + " " + base64.StdEncoding.EncodeToString([]byte(code))
	for _, kv := range env {
		line += " " + base64.StdEncoding.EncodeToString([]byte(kv))
	}
	return []byte(line + "\n")
}

// Result is a kernel's answer to one cell.
type Result struct {
	ID             uint64 `json:"id"`
	ExecutionCount int    `json:"execution_count"`
	// Status is "ok" or "error".
	Status string `json:"status"`
	// Data is the value of the cell's last expression by MIME type
	// (text/plain always; image/png base64).
	Data map[string]any `json:"data,omitempty"`
	// Display are the outputs the cell displayed besides its value
	// (matplotlib figures), each by MIME type.
	Display []map[string]any `json:"display,omitempty"`
	Error   *Error           `json:"error,omitempty"`
	// ExitCode is a bash cell's status.
	ExitCode *int `json:"exit_code,omitempty"`
}

// Error is what a cell raised.
type Error struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// Splitter separates a kernel's stdout into the cell's output and the
// result line, across the chunks the output arrives in.
type Splitter struct {
	mark []byte
	// MaxResult bounds a result line; a longer one is an error.
	MaxResult int
	// held is output that may begin the mark (not yet passed on), or the
	// result line being read once inResult.
	held     []byte
	inResult bool
}

// NewSplitter returns a splitter for the kernel of nonce.
func NewSplitter(nonce string, maxResult int) *Splitter {
	return &Splitter{mark: []byte("\x1e" + nonce + " "), MaxResult: maxResult}
}

// Write takes the next chunk of stdout. It returns the part that is the
// cell's output, and the result line (without mark and newline) once it
// is complete; output after the result is dropped.
func (s *Splitter) Write(chunk []byte) (output, result []byte, err error) {
	s.held = append(s.held, chunk...)
	if !s.inResult {
		i := bytes.Index(s.held, s.mark)
		if i < 0 {
			// Pass on all but what may be the start of the mark.
			keep := partialSuffix(s.held, s.mark)
			output = append([]byte(nil), s.held[:len(s.held)-keep]...)
			s.held = append(s.held[:0], s.held[len(s.held)-keep:]...)
			return output, nil, nil
		}
		output = append([]byte(nil), s.held[:i]...)
		s.held = append(s.held[:0], s.held[i+len(s.mark):]...)
		s.inResult = true
	}
	j := bytes.IndexByte(s.held, '\n')
	if j < 0 {
		if len(s.held) > s.MaxResult {
			return output, nil, fmt.Errorf("the kernel's result is over %d bytes", s.MaxResult)
		}
		return output, nil, nil
	}
	return output, s.held[:j], nil
}

// Rest is how many bytes of the chunks written followed the result line
// (to be read again by the next cell).
func (s *Splitter) Rest() int {
	if j := bytes.IndexByte(s.held, '\n'); s.inResult && j >= 0 {
		return len(s.held) - j - 1
	}
	return 0
}

// partialSuffix is the length of the longest end of b that begins mark.
func partialSuffix(b, mark []byte) int {
	for n := min(len(b), len(mark)-1); n > 0; n-- {
		if bytes.HasPrefix(mark, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// ParseResult decodes a result line.
func ParseResult(line []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(line, &r); err != nil {
		return Result{}, fmt.Errorf("the kernel's result is not JSON: %w", err)
	}
	if r.Status != "ok" && r.Status != "error" {
		return Result{}, fmt.Errorf("the kernel's result has status %q", r.Status)
	}
	return r, nil
}
