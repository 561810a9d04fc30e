package interp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestSplitterAcrossChunks: the mark and the result line are found
// whatever chunks they arrive in, and output before them is passed on
// whole, nothing more.
func TestSplitterAcrossChunks(t *testing.T) {
	stream := "out\x1e no\x1eN\x1eNONCE {\"id\":1,\"status\":\"ok\"}\nafter"
	for size := 1; size <= len(stream); size++ {
		s := NewSplitter("NONCE", 1<<10)
		var out bytes.Buffer
		var result []byte
		for i := 0; i < len(stream) && result == nil; i += size {
			o, r, err := s.Write([]byte(stream[i:min(i+size, len(stream))]))
			if err != nil {
				t.Fatal(err)
			}
			out.Write(o)
			result = r
		}
		if out.String() != "out\x1e no\x1eN" || string(result) != `{"id":1,"status":"ok"}` {
			t.Fatalf("chunks of %d: output %q result %q", size, out.String(), result)
		}
	}
	s := NewSplitter("N", 8)
	if _, _, err := s.Write([]byte("\x1eN {\"id\":1,\"status\":")); err == nil {
		t.Error("a result over the bound was taken")
	}
	for _, bad := range []string{`{`, `{"id":1,"status":"maybe"}`} {
		if _, err := ParseResult([]byte(bad)); err == nil {
			t.Errorf("ParseResult(%s) took it", bad)
		}
	}
}

// kernelPATH is the PATH the kernels are found and run with: a sandbox's
// default, whatever the test process's PATH is (it may put a python3
// first that cannot run with this PATH, such as pyenv's shims).
const kernelPATH = runtime.DefaultPath

// lookPath finds program in kernelPATH.
func lookPath(t *testing.T, program string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(kernelPATH) {
		if p, err := exec.LookPath(filepath.Join(dir, program)); err == nil {
			return p
		}
	}
	testutil.Skip(t, "no "+program+" in "+kernelPATH)
	return ""
}

// run runs cells through language's kernel on this host (which has
// python3, node and bash), from its file as hutch runs it, and returns
// each cell's output and result.
func run(t *testing.T, language string, cells ...string) ([]string, []Result) {
	t.Helper()
	return runWith(t, language, nil, cells...)
}

// runWith is run with env added to the kernel's environment.
func runWith(t *testing.T, language string, env []string, cells ...string) ([]string, []Result) {
	t.Helper()
	k, _ := KernelOf(language)
	dir := t.TempDir()
	if err := os.WriteFile(k.Path(dir), []byte(k.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for i, c := range cells {
		in.Write(k.Request(uint64(i+1), c, nil))
	}
	return runKernel(t, k, dir, env, in.Bytes(), len(cells))
}

// runRaw runs language's kernel on the request lines in, of n cells.
func runRaw(t *testing.T, language string, in []byte, n int) ([]string, []Result) {
	t.Helper()
	k, _ := KernelOf(language)
	dir := t.TempDir()
	if err := os.WriteFile(k.Path(dir), []byte(k.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	return runKernel(t, k, dir, nil, in, n)
}

// runKernel runs k from dir with env added on the request lines in, and
// returns the outputs and results of its cells.
func runKernel(t *testing.T, k Kernel, dir string, env []string, in []byte, cells int) ([]string, []Result) {
	t.Helper()
	argv := k.Argv(dir)
	cmd := exec.Command(lookPath(t, argv[0]), argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append(append([]string{NonceEnv + "=n0nce", "PATH=" + kernelPATH}, k.Env...), env...)
	cmd.Stdin = bytes.NewReader(in)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	var outs []string
	var results []Result
	s := NewSplitter("n0nce", 1<<20)
	var out bytes.Buffer
	buf := make([]byte, 7) // small reads: results span chunks
	for len(results) < cells {
		n, err := stdout.Read(buf)
		if n > 0 {
			o, line, serr := s.Write(buf[:n])
			if serr != nil {
				t.Fatal(serr)
			}
			out.Write(o)
			if line != nil {
				r, perr := ParseResult(line)
				if perr != nil {
					t.Fatal(perr)
				}
				outs, results = append(outs, out.String()), append(results, r)
				out.Reset()
				// What followed the result in this chunk starts the next.
				rest := append([]byte(nil), s.held[len(line)+1:]...)
				s = NewSplitter("n0nce", 1<<20)
				if len(rest) > 0 {
					o, line, _ := s.Write(rest)
					out.Write(o)
					if line != nil {
						t.Fatal("two results in one read")
					}
				}
			}
		}
		if err == io.EOF {
			t.Fatalf("the kernel ended after %d results; output %q", len(results), out.String())
		}
	}
	return outs, results
}

func TestPythonKernel(t *testing.T) {
	outs, rs := run(t, Python, "x = 41", "print('hi')\nx + 1", "import json\n1/0", "json.dumps([x])",
		"class H:\n    def _repr_html_(self): return '<b>h</b>'\nH()", "import sys\nsys.path[0]")
	if rs[0].Status != "ok" || rs[0].Data != nil {
		t.Errorf("assignment: %+v", rs[0])
	}
	if outs[1] != "hi\n" || rs[1].Data["text/plain"] != "42" || rs[1].ExecutionCount != 2 {
		t.Errorf("x + 1: %q %+v", outs[1], rs[1])
	}
	if e := rs[2].Error; rs[2].Status != "error" || e == nil || e.Name != "ZeroDivisionError" || !strings.Contains(strings.Join(e.Traceback, ""), "<cell>") {
		t.Errorf("1/0: %+v", rs[2])
	}
	if rs[3].Data["text/plain"] != `'[41]'` {
		t.Errorf("an import persists: %+v", rs[3])
	}
	if rs[4].Data["text/html"] != "<b>h</b>" {
		t.Errorf("_repr_html_: %+v", rs[4])
	}
	// Run from its file, the kernel still imports from the working
	// directory and keeps its own frames out of tracebacks.
	if rs[5].Data["text/plain"] != "''" {
		t.Errorf("sys.path[0] is %+v, want '' (the working directory)", rs[5])
	}
	if tb := strings.Join(rs[2].Error.Traceback, ""); strings.Contains(tb, "hutch-kernel") {
		t.Errorf("the kernel's frames are in a cell's traceback: %s", tb)
	}
}

func TestJavaScriptKernel(t *testing.T) {
	outs, rs := run(t, JavaScript, "const x = await Promise.resolve(41)", "console.log('hi'); x + 1", "null.f")
	if rs[0].Status != "ok" || outs[1] != "hi\n" || rs[1].Data["text/plain"] != "42" {
		t.Errorf("results %+v, outputs %q", rs, outs)
	}
	if rs[2].Error == nil || rs[2].Error.Name != "TypeError" {
		t.Errorf("null.f: %+v", rs[2])
	}
}

func TestBashKernel(t *testing.T) {
	outs, rs := run(t, Bash, "cd /tmp; export A=5", "echo $PWD $A", "false", "read x; echo \"[$x]\"")
	if outs[1] != "/tmp 5\n" || rs[2].Status != "error" || *rs[2].ExitCode != 1 || outs[3] != "[]\n" {
		t.Errorf("results %+v, outputs %q", rs, outs)
	}
}

// TestKernelsIgnoreTheCallersPATH: the kernels are found and run with one
// PATH, not the test process's: a directory first on that PATH whose
// python3, node and bash cannot run kernels (as pyenv's shims may not)
// changes nothing.
func TestKernelsIgnoreTheCallersPATH(t *testing.T) {
	decoy := t.TempDir()
	for _, name := range []string{"python3", "node", "bash"} {
		if err := os.WriteFile(filepath.Join(decoy, name), []byte("#!/bin/sh\necho decoy >&2\nexit 97\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", decoy+string(filepath.ListSeparator)+os.Getenv("PATH"))
	for _, lang := range Languages {
		t.Run(lang, func(t *testing.T) {
			code := map[string]string{Python: "6 * 7", JavaScript: "6 * 7", Bash: "echo 42", TypeScript: "6 * 7"}[lang]
			outs, rs := runWith(t, lang, []string{"NODE_PATH=" + fakeTypeScript(t)}, code)
			if rs[0].Status != "ok" || (rs[0].Data["text/plain"] != "42" && outs[0] != "42\n") {
				t.Errorf("%s: output %q result %+v", lang, outs[0], rs[0])
			}
		})
	}
}

// fakeTypeScript is a node_modules directory whose typescript package
// strips ": number" annotations: the kernel's use of the package, without
// the real one.
func fakeTypeScript(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "node_modules")
	pkg := filepath.Join(dir, "typescript")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `exports.ScriptTarget = { ES2022: 9 }; exports.ModuleKind = { CommonJS: 1 }
exports.transpileModule = (code, opts) => {
  if (opts.compilerOptions.target !== 9) throw new Error('target')
  return { outputText: code.replace(/: number/g, '') }
}
`
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTypeScriptKernel(t *testing.T) {
	outs, rs := runWith(t, TypeScript, []string{"NODE_PATH=" + fakeTypeScript(t)},
		"const x: number = await Promise.resolve(41)", "console.log('hi'); x + 1")
	if rs[0].Status != "ok" || outs[1] != "hi\n" || rs[1].Data["text/plain"] != "42" {
		t.Errorf("results %+v, outputs %q", rs, outs)
	}
	// Without a transpiler (this host's node has no type stripping, or
	// strips the annotation itself), a cell says what is missing.
	_, rs = run(t, TypeScript, "const y: number = 1; y")
	if r := rs[0]; !(r.Status == "ok" && r.Data["text/plain"] == "1") && (r.Error == nil || r.Error.Name != "TypeScriptUnavailable") {
		t.Errorf("without typescript: %+v", r)
	}
}

// TestCellEnv: a cell's own variables are set for it and gone after,
// the context's own value back, in every kernel.
func TestCellEnv(t *testing.T) {
	for lang, cells := range map[string][3]string{
		Python:     {"import os; os.environ['K'] = 'context'", "os.environ['K'] + os.environ['ONLY']", "os.environ['K'] + str('ONLY' in os.environ)"},
		JavaScript: {"process.env.K = 'context'", "process.env.K + process.env.ONLY", "process.env.K + ('ONLY' in process.env)"},
		Bash:       {"export K=context", "echo \"$K$ONLY\"", "echo \"$K${ONLY-unset}\""},
	} {
		t.Run(lang, func(t *testing.T) {
			k, _ := KernelOf(lang)
			var in bytes.Buffer
			in.Write(k.Request(1, cells[0], nil))
			in.Write(k.Request(2, cells[1], []string{"K=cell", "ONLY=x y"}))
			in.Write(k.Request(3, cells[2], nil))
			outs, rs := runRaw(t, lang, in.Bytes(), 3)
			got := []string{strings.TrimSpace(outs[1]) + fmt.Sprint(rs[1].Data["text/plain"]), strings.TrimSpace(outs[2]) + fmt.Sprint(rs[2].Data["text/plain"])}
			want := map[string][]string{
				Python:     {"'cellx y'", "'contextFalse'"},
				JavaScript: {"'cellx y'", "'contextfalse'"},
				Bash:       {"cellx y<nil>", "contextunset<nil>"},
			}[lang]
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q (results %+v)", got, want, rs)
			}
		})
	}
}
