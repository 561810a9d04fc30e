package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// runFake is a Sandboxes that records what sandbox::run asks of it. A unit
// test stands in for the manager here because a real one needs root and
// runsc; integration/run_test.go runs sandbox::run against real sandboxes.
type runFake struct {
	// FS is nil: only WriteFile of it is used.
	FS
	// Sandboxes is nil: sandbox::run uses none of the state moves.
	Sandboxes
	createErr error
	// writeErr fails every WriteFile.
	writeErr error
	// execFn answers each exec; nil answers exit 0.
	execFn func(req api.ExecRequest) (api.ExecResponse, error)

	mu     sync.Mutex
	calls  []string
	execs  []api.ExecRequest
	writes []api.FsWriteRequest
	// stopped and stopCtxErr record the stop and its context's error then.
	stopped    bool
	stopCtxErr error
}

const runFakeID = "0b3a6c4e-2f1d-4e8a-9c7b-5d6e7f8a9b0c"

func (f *runFake) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *runFake) Create(_ context.Context, r api.CreateRequest) (api.CreateResponse, error) {
	f.record("create " + r.Image + " " + strings.Join(r.Env, ","))
	if f.createErr != nil {
		return api.CreateResponse{}, f.createErr
	}
	return api.CreateResponse{SandboxID: runFakeID, Image: r.Image}, nil
}

func (f *runFake) Exec(_ context.Context, r api.ExecRequest) (api.ExecResponse, error) {
	f.record("exec " + strings.Join(r.Argv, " "))
	f.mu.Lock()
	f.execs = append(f.execs, r)
	f.mu.Unlock()
	if f.execFn != nil {
		return f.execFn(r)
	}
	zero := 0
	return api.ExecResponse{Stdout: "ok\n", ExitCode: &zero, Success: true}, nil
}

func (f *runFake) WriteFile(_ context.Context, r api.FsWriteRequest) (api.FsWriteResponse, error) {
	f.record("write " + r.Path)
	f.mu.Lock()
	f.writes = append(f.writes, r)
	f.mu.Unlock()
	if f.writeErr != nil {
		return api.FsWriteResponse{}, f.writeErr
	}
	return api.FsWriteResponse{BytesWritten: int64(len(*r.Content)), Path: r.Path}, nil
}

func (f *runFake) Stop(ctx context.Context, r api.StopRequest) (api.StopResponse, error) {
	f.record("stop " + r.SandboxID)
	f.mu.Lock()
	f.stopped, f.stopCtxErr = true, ctx.Err()
	f.mu.Unlock()
	return api.StopResponse{SandboxID: r.SandboxID, Stopped: true}, nil
}

func (f *runFake) List(context.Context, api.ListRequest) (api.ListResponse, error) {
	return api.ListResponse{}, nil
}

func (f *runFake) Get(context.Context, api.GetRequest) (api.SandboxInfo, error) {
	return api.SandboxInfo{}, nil
}

func TestRunLanguages(t *testing.T) {
	tests := []struct {
		lang, wantArgv string
	}{
		{"python", "python3 /tmp/run.py"},
		{"py", "python3 /tmp/run.py"},
		{"Python", "python3 /tmp/run.py"},
		{"node", "node /tmp/run.js"},
		{"js", "node /tmp/run.js"},
		{"javascript", "node /tmp/run.js"},
		{"shell", "/bin/sh /tmp/run.sh"},
		{"sh", "/bin/sh /tmp/run.sh"},
		{"bash", "/bin/sh /tmp/run.sh"},
		{"/usr/bin/perl", "/usr/bin/perl /tmp/run.perl"},
		{"ruby3.1", "ruby3.1 /tmp/run.ruby31"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			f := &runFake{}
			payload, _ := json.Marshal(api.RunRequest{Image: "python", Lang: tt.lang, Code: "x"})
			res, err := New(Deps{Sandboxes: f, Files: f}).Call(context.Background(), api.FnRun, payload, Params{})
			if err != nil {
				t.Fatal(err)
			}
			last := f.execs[len(f.execs)-1]
			if got := strings.Join(last.Argv, " "); got != tt.wantArgv {
				t.Errorf("argv = %q, want %q", got, tt.wantArgv)
			}
			if r := res.(api.RunResponse); r.Stdout != "ok\n" || r.SandboxID != "" {
				t.Errorf("result = %+v, want the exec result without sandbox_id", r)
			}
		})
	}
}

func TestRunSteps(t *testing.T) {
	f := &runFake{}
	req := api.RunRequest{
		Image: "python", Lang: "python", Code: "print(2+2)",
		Files:     []api.RunFile{{Path: "/work/lib/a.py", Content: "A = 1\n"}},
		Env:       api.Env{"K=V"},
		Stdin:     base64.StdEncoding.EncodeToString([]byte("in")),
		TimeoutMs: 1234,
	}
	if _, err := New(Deps{Sandboxes: f, Files: f}).run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create python K=V",
		"write /work/lib/a.py",
		"write /tmp/run.py",
		"exec python3 /tmp/run.py",
		"stop " + runFakeID,
	}
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
	for i, want := range []string{"A = 1\n", "print(2+2)"} {
		w := f.writes[i]
		if *w.Content != want || w.Mode != "0644" || !w.Parents {
			t.Errorf("write %d = %+v (content %q), want %q with mode 0644 and parents", i, w, *w.Content, want)
		}
	}
	code := f.execs[0]
	if code.Stdin != req.Stdin || code.TimeoutMs != 1234 {
		t.Errorf("code exec = %+v, want the run's stdin and timeout", code)
	}
}

func TestRunBadInputCreatesNothing(t *testing.T) {
	tests := []struct {
		name, payload, want string
	}{
		{"no lang", `{"image":"python","code":"x"}`, "lang is required"},
		{"lang with args", `{"image":"python","code":"x","lang":"python3 -u"}`, "interpreter arguments are not supported"},
		{"no code", `{"image":"python","lang":"python"}`, "code is required"},
		{"relative file", `{"image":"python","lang":"python","code":"x","files":[{"path":"a.py","content":""}]}`, "must be an absolute path"},
		{"dir file", `{"image":"python","lang":"python","code":"x","files":[{"path":"/tmp/","content":""}]}`, "names a directory"},
		{"bad stdin", `{"image":"python","lang":"python","code":"x","stdin":"%%%"}`, "stdin is not valid base64"},
		{"unknown field", `{"image":"python","lang":"python","code":"x","cmd":"ls"}`, `unknown field "cmd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &runFake{}
			_, err := New(Deps{Sandboxes: f, Files: f}).Call(context.Background(), api.FnRun, json.RawMessage(tt.payload), Params{})
			if !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want S001 containing %q", err, tt.want)
			}
			if len(f.calls) != 0 {
				t.Fatalf("bad input reached the manager: %q", f.calls)
			}
		})
	}
}

func TestRunStepFailures(t *testing.T) {
	tests := []struct {
		name      string
		keep      bool
		createErr error
		writeErr  error
		execFn    func(api.ExecRequest) (api.ExecResponse, error)
		wantCode  errdefs.Code
		wantStep  string
		wantID    bool
		wantStop  bool
		wantInFix map[string]any
	}{
		{
			name:      "create not allowed",
			createErr: errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not allowed", "ruby"),
			wantCode:  errdefs.CodeImageNotAllowed, wantStep: "create",
		},
		{
			name:     "write refused",
			writeErr: errdefs.New(errdefs.CodeFSPermission, "permission denied: /tmp/run.py"),
			wantCode: errdefs.CodeFSPermission, wantStep: "write_code", wantID: true, wantStop: true,
		},
		{
			name: "code timed out",
			execFn: func(r api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{TimedOut: true, TimeoutMs: 500}, nil
			},
			wantCode: errdefs.CodeExecTimeout, wantStep: "exec", wantID: true, wantStop: true,
			wantInFix: map[string]any{"timeout_ms": uint64(1000)},
		},
		{
			name: "kept after a timeout",
			keep: true,
			execFn: func(r api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{TimedOut: true, TimeoutMs: 500}, nil
			},
			wantCode: errdefs.CodeExecTimeout, wantStep: "exec", wantID: true, wantStop: false,
		},
		{
			name: "sandbox died",
			execFn: func(api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{}, errdefs.New(errdefs.CodeStopped, "sandbox stopped during the exec: out of memory")
			},
			wantCode: errdefs.CodeStopped, wantStep: "exec", wantID: true, wantStop: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &runFake{createErr: tt.createErr, writeErr: tt.writeErr, execFn: tt.execFn}
			_, err := New(Deps{Sandboxes: f, Files: f}).run(context.Background(), api.RunRequest{Image: "python", Lang: "python", Code: "x", KeepSandbox: tt.keep})
			e := errdefs.As(err)
			if e.Code != tt.wantCode {
				t.Fatalf("err = %v (%s), want %s", err, e.Code, tt.wantCode)
			}
			if got := e.Fix["context"]; got != "during sandbox::run step "+tt.wantStep {
				t.Errorf("fix.context = %v, want step %s", got, tt.wantStep)
			}
			if got := e.Fix["inner_code"]; got != string(tt.wantCode) {
				t.Errorf("fix.inner_code = %v, want %s", got, tt.wantCode)
			}
			if _, ok := e.Fix["sandbox_id"]; ok != tt.wantID {
				t.Errorf("fix.sandbox_id present = %v, want %v (fix %v)", ok, tt.wantID, e.Fix)
			}
			for k, v := range tt.wantInFix {
				if e.Fix[k] != v {
					t.Errorf("fix.%s = %v, want the inner fix's %v", k, e.Fix[k], v)
				}
			}
			stopped := strings.HasPrefix(f.calls[len(f.calls)-1], "stop ")
			if stopped != tt.wantStop {
				t.Errorf("sandbox stopped = %v, want %v (calls %q)", stopped, tt.wantStop, f.calls)
			}
		})
	}
}

func TestRunStopsWhenTheCallerIsGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &runFake{}
	f.execFn = func(r api.ExecRequest) (api.ExecResponse, error) {
		cancel() // the caller disconnects while the code runs
		return api.ExecResponse{}, context.Canceled
	}
	if _, err := New(Deps{Sandboxes: f, Files: f}).run(ctx, api.RunRequest{Image: "python", Lang: "python", Code: "x"}); err == nil {
		t.Fatal("run of a cancelled call succeeded")
	}
	if !f.stopped {
		t.Fatal("sandbox not stopped")
	}
	if f.stopCtxErr != nil {
		t.Fatalf("stop ran on a dead context: %v", f.stopCtxErr)
	}
}
