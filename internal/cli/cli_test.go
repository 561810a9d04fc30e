package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/testutil"
)

const id = functionstest.DefaultID

// harness runs the CLI in-process against the REST API over a fake manager
// (unit level: the real manager needs root and runsc).
type harness struct {
	t    *testing.T
	fake *functionstest.Fake
	env  map[string]string
	// tty lists the streams ("stdout", "stderr") that pretend to be terminals.
	tty map[string]bool
	// startDaemon replaces the real background start; nil fails the test.
	startDaemon func(dataDir, listen string) (string, <-chan error, error)
	// serviceState stands for systemd's state of the package's unit; nil
	// is no unit installed.
	serviceState func() string
	// healthWait overrides the harness's one-second wait for a daemon.
	healthWait time.Duration
}

func newHarness(t *testing.T, fake *functionstest.Fake) *harness {
	srv := functionstest.NewServer(t, fake, httpapi.Options{})
	return &harness{t: t, fake: fake, env: map[string]string{"HUTCH_URL": srv.URL}, tty: map[string]bool{}}
}

// run runs `hutch args...` with stdin and returns stdout, stderr and the exit status.
func (h *harness) run(stdin string, args ...string) (string, string, int) {
	h.t.Helper()
	return h.runContext(context.Background(), stdin, args...)
}

// runContext is run under ctx, whose end stands for SIGINT.
func (h *harness) runContext(ctx context.Context, stdin string, args ...string) (string, string, int) {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{
		stdin:  strings.NewReader(stdin),
		stdout: &stdout,
		stderr: &stderr,
		getenv: func(k string) string { return h.env[k] },
		isTerminal: func(s any) bool {
			return (s == &stdout && h.tty["stdout"]) || (s == &stderr && h.tty["stderr"])
		},
		pollInterval: 5 * time.Millisecond,
		healthWait:   cmp.Or(h.healthWait, time.Second),
		serviceState: func() string {
			if h.serviceState == nil {
				return ""
			}
			return h.serviceState()
		},
		startDaemon: func(dataDir, listen string) (string, <-chan error, error) {
			if h.startDaemon == nil {
				h.t.Errorf("unexpected daemon start (data dir %s, listen %s)", dataDir, listen)
				return "", nil, errors.New("no daemon start in this test")
			}
			return h.startDaemon(dataDir, listen)
		},
	}
	code := a.run(ctx, args)
	return stdout.String(), stderr.String(), code
}

func exitCode(n int) *int { return &n }

func TestCreate(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		tty        map[string]bool
		wantReq    api.CreateRequest
		wantStderr string // substring; "" means stderr must be empty
	}{
		{
			name:    "plain",
			args:    []string{"create", "python"},
			wantReq: api.CreateRequest{Image: "python"},
		},
		{
			name: "every flag",
			args: []string{"create", "python", "--cpus", "2", "--memory", "256", "--idle-timeout", "60",
				"--name", "agent-1", "--network", "-e", "A=1", "--env", "B=x=y", "-e", "SKIPPED", "-e", "=nokey", "-e", "C=", "--runtime", "microvm"},
			wantReq: api.CreateRequest{Image: "python", CPUs: 2, MemoryMB: 256, IdleTimeoutSecs: 60, Name: "agent-1",
				Network: true, Env: api.Env{"A=1", "B=x=y", "C="}, Runtime: "microvm"},
		},
		{
			name:    "sizes and durations as a person types them",
			args:    []string{"create", "python", "--memory", "1g", "--idle-timeout", "5m"},
			wantReq: api.CreateRequest{Image: "python", MemoryMB: 1024, IdleTimeoutSecs: 300},
		},
		{
			name:    "memory units in any case, with or without b or ib",
			args:    []string{"create", "python", "--memory", "2GiB", "--idle-timeout", "90s"},
			wantReq: api.CreateRequest{Image: "python", MemoryMB: 2048, IdleTimeoutSecs: 90},
		},
		{
			name:    "memory in MiB and KiB",
			args:    []string{"create", "python", "--memory", "512M", "--idle-timeout", "1500ms"},
			wantReq: api.CreateRequest{Image: "python", MemoryMB: 512, IdleTimeoutSecs: 2},
		},
		{
			name:    "memory in KiB",
			args:    []string{"create", "python", "--memory", "262144kb"},
			wantReq: api.CreateRequest{Image: "python", MemoryMB: 256},
		},
		{
			name:       "terminal",
			args:       []string{"create", "node"},
			tty:        map[string]bool{"stdout": true, "stderr": true},
			wantReq:    api.CreateRequest{Image: "node"},
			wantStderr: "✓ sandbox ready in ",
		},
		{
			name:    "captured by $(...)",
			args:    []string{"create", "node"},
			tty:     map[string]bool{"stderr": true},
			wantReq: api.CreateRequest{Image: "node"},
		},
		{
			name: "life terms",
			args: []string{"create", "python", "--lifetime", "90s", "--on-idle", "pause", "--auto-resume",
				"--metadata", "team=red", "--metadata", "run=a=b"},
			wantReq: api.CreateRequest{Image: "python", TimeoutSecs: 90, OnIdle: "pause", AutoResume: true,
				Metadata: map[string]string{"team": "red", "run": "a=b"}},
		},
		{
			name:    "stderr redirected",
			args:    []string{"create", "node"},
			tty:     map[string]bool{"stdout": true},
			wantReq: api.CreateRequest{Image: "node"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			h := newHarness(t, fake)
			if tt.tty != nil {
				h.tty = tt.tty
			}
			out, errOut, code := h.run("", tt.args...)
			if code != 0 || out != id+"\n" {
				t.Fatalf("code %d stdout %q stderr %q; want 0 and only the id", code, out, errOut)
			}
			if (tt.wantStderr == "") != (errOut == "") || !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("stderr %q, want %q", errOut, tt.wantStderr)
			}
			calls := fake.CallsOf("Create")
			if len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, tt.wantReq) {
				t.Errorf("create request %+v, want %+v", calls, tt.wantReq)
			}
		})
	}
}

// TestCreateSaysWhatIsNotForwarded: ports the daemon refused to forward
// are named on stderr; stdout is still only the id.
func TestCreateSaysWhatIsNotForwarded(t *testing.T) {
	fake := &functionstest.Fake{}
	fake.CreateFunc = func(_ context.Context, req api.CreateRequest) (api.CreateResponse, error) {
		return api.CreateResponse{SandboxID: id, Image: req.Image, UnforwardedPorts: []uint16{5432}}, nil
	}
	out, errOut, code := newHarness(t, fake).run("", "create", "python", "--network", "-e", "DB=postgres://localhost:5432/db")
	if code != 0 || out != id+"\n" || !strings.Contains(errOut, "host ports [5432] named in env are not forwarded") {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestExecStatus(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		res        api.ExecResponse
		err        error
		wantCode   int
		wantStdout string
		wantStderr string // substring
	}{
		{
			name:       "success",
			res:        api.ExecResponse{Stdout: "out\n", Stderr: "warn\n", ExitCode: exitCode(0)},
			wantStdout: "out\n", wantStderr: "warn\n",
		},
		{
			name:     "child exit code",
			res:      api.ExecResponse{Stdout: "partial", ExitCode: exitCode(3)},
			wantCode: 3, wantStdout: "partial",
		},
		{
			name:     "timeout",
			args:     []string{"--timeout", "500ms"},
			res:      api.ExecResponse{Stdout: "so far", TimedOut: true},
			wantCode: 124, wantStdout: "so far", wantStderr: "hutch: timed out after 500ms",
		},
		{
			name:     "timeout by default",
			res:      api.ExecResponse{TimedOut: true, TimeoutMs: 30_000},
			wantCode: 124, wantStderr: "hutch: timed out after 30s (the daemon's default exec timeout",
		},
		{
			name:     "envelope error",
			err:      errdefs.New(errdefs.CodeStopped, "sandbox %s is stopped", id).WithFix(nil, "create a new one"),
			wantCode: 125, wantStderr: "hutch: S004: sandbox " + id + " is stopped\nhutch: hint: create a new one\n",
		},
		{
			name:     "no exit status",
			res:      api.ExecResponse{},
			wantCode: 125, wantStderr: "without an exit status",
		},
		{
			name:     "out of memory",
			res:      api.ExecResponse{ExitCode: exitCode(137), OOMKilled: true},
			wantCode: 137, wantStderr: "hutch: killed: out of memory",
		},
		{
			name:     "truncated output",
			res:      api.ExecResponse{Stdout: "x", StdoutTruncated: true, ExitCode: exitCode(0)},
			wantCode: 0, wantStdout: "x", wantStderr: "stdout truncated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
				return tt.res, tt.err
			}}
			args := append(append([]string{"exec", id}, tt.args...), "--", "sh", "-c", "exit 3")
			out, errOut, code := newHarness(t, fake).run("", args...)
			if code != tt.wantCode || out != tt.wantStdout || !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("code %d stdout %q stderr %q; want %d %q %q", code, out, errOut, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestExecRequest(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  api.ExecRequest
	}{
		{
			name: "dash dash",
			args: []string{"exec", id, "--", "python3", "-c", "print(1)"},
			want: api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", "print(1)"}},
		},
		{
			name: "without dash dash",
			args: []string{"exec", id, "ls", "/tmp"},
			want: api.ExecRequest{SandboxID: id, Argv: []string{"ls", "/tmp"}},
		},
		{
			name: "flags before and after the id",
			args: []string{"exec", "--timeout", "2s", id, "-e", "A=1", "-e", "NOPE", "-w", "/work", "--", "env"},
			want: api.ExecRequest{SandboxID: id, Argv: []string{"env"}, Env: api.Env{"A=1"}, TimeoutMs: 2000, Workdir: "/work"},
		},
		{
			name:  "stdin with -i",
			stdin: "piped\x00input",
			args:  []string{"exec", "-i", id, "--", "cat"},
			want:  api.ExecRequest{SandboxID: id, Argv: []string{"cat"}, Stdin: base64.StdEncoding.EncodeToString([]byte("piped\x00input"))},
		},
		{
			name:  "stdin ignored without -i",
			stdin: "ignored",
			args:  []string{"exec", id, "--", "cat"},
			want:  api.ExecRequest{SandboxID: id, Argv: []string{"cat"}},
		},
		{
			name: "a program path with a space stays one word",
			args: []string{"exec", id, "--", "/opt/my app/run", "a b"},
			want: api.ExecRequest{SandboxID: id, Argv: []string{"/opt/my app/run", "a b"}},
		},
		{
			name: "sub-millisecond timeout rounds up",
			args: []string{"exec", "--timeout", "10us", id, "--", "true"},
			want: api.ExecRequest{SandboxID: id, Argv: []string{"true"}, TimeoutMs: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			_, errOut, code := newHarness(t, fake).run(tt.stdin, tt.args...)
			if code != 0 {
				t.Fatalf("code %d stderr %q", code, errOut)
			}
			calls := fake.Calls()
			if len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, tt.want) {
				t.Errorf("calls %+v, want exec %+v", calls, tt.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"exec without command", []string{"exec", id}, 125, "no command given"},
		{"exec without id", []string{"exec", "--", "ls"}, 125, "want one ID before --"},
		{"exec two ids", []string{"exec", id, id, "--", "ls"}, 125, "want one ID before --, got 2"},
		{"exec command flag without dash dash", []string{"exec", id, "python3", "-c", "1"}, 125, "goes after --"},
		{"exec negative timeout", []string{"exec", "--timeout", "-1s", id, "--", "true"}, 125, "must not be negative"},
		{"exec bad duration", []string{"exec", "--timeout", "5", id, "--", "true"}, 125, "missing unit"},
		{"run bad cpus", []string{"run", "python", "--cpus", "two", "--", "true"}, 125, "invalid argument"},
		{"run without command", []string{"run", "python"}, 125, "no command given"},
		{"create without image", []string{"create"}, 2, "create needs an IMAGE"},
		{"create bad memory", []string{"create", "python", "--memory", "-5"}, 2, "invalid argument"},
		{"create memory with a fraction", []string{"create", "python", "--memory", "1.5g"}, 2, "not a size: a whole number with k, m, g or t"},
		{"create memory not whole MiB", []string{"create", "python", "--memory", "1000k"}, 2, "not a whole number of MiB"},
		{"create bad idle timeout", []string{"create", "python", "--idle-timeout", "soon"}, 2, "not a duration (90s, 5m, 2h)"},
		{"list extra argument", []string{"list", "x"}, 2, "unknown command"},
		{"stop without id", []string{"stop"}, 2, "requires at least 1 arg"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"list", "--all"}, 2, "unknown flag"},
		{"serve bad log level", []string{"serve", "--log-level", "loud"}, 2, "--log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			out, errOut, code := newHarness(t, fake).run("", tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantStderr) || !strings.Contains(errOut, "--help' for usage") {
				t.Errorf("code %d stderr %q; want %d with %q and a usage pointer", code, errOut, tt.wantCode, tt.wantStderr)
			}
			if out != "" {
				t.Errorf("stdout %q, want empty", out)
			}
			if m := fake.Methods(); len(m) != 0 {
				t.Errorf("the daemon was called: %v", m)
			}
		})
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		fake        *functionstest.Fake
		wantCode    int
		wantStdout  string
		wantStderr  string
		wantMethods []string
	}{
		{
			name:        "create exec stop",
			args:        []string{"run", "python", "--cpus", "2", "-e", "A=1", "--timeout", "3s", "--", "python3", "-c", "print(2**10)"},
			fake:        &functionstest.Fake{},
			wantStdout:  "python3 -c print(2**10)\n",
			wantMethods: []string{"Create", "Exec", "Stop"},
		},
		{
			name: "child status passes through",
			args: []string{"run", "python", "--", "false"},
			fake: &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{ExitCode: exitCode(1)}, nil
			}},
			wantCode:    1,
			wantMethods: []string{"Create", "Exec", "Stop"},
		},
		{
			name: "timeout",
			args: []string{"run", "python", "--timeout", "1s", "--", "sleep", "9"},
			fake: &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{TimedOut: true}, nil
			}},
			wantCode:    124,
			wantStderr:  "timed out after 1s",
			wantMethods: []string{"Create", "Exec", "Stop"},
		},
		{
			name: "create fails",
			args: []string{"run", "ruby", "--", "ruby", "-v"},
			fake: &functionstest.Fake{CreateFunc: func(context.Context, api.CreateRequest) (api.CreateResponse, error) {
				return api.CreateResponse{}, errdefs.New(errdefs.CodeImageNotAllowed, `image "ruby" is not allowed`)
			}},
			wantCode:    125,
			wantStderr:  `hutch: S100: image "ruby" is not allowed`,
			wantMethods: []string{"Create"},
		},
		{
			name: "exec fails, the sandbox is still stopped",
			args: []string{"run", "python", "--", "true"},
			fake: &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
				return api.ExecResponse{}, errdefs.New(errdefs.CodeExecBusy, "busy")
			}},
			wantCode:    125,
			wantStderr:  "hutch: S003: busy",
			wantMethods: []string{"Create", "Exec", "Stop"},
		},
		{
			name: "stop failure is only a warning",
			args: []string{"run", "python", "--", "true"},
			fake: &functionstest.Fake{StopFunc: func(context.Context, api.StopRequest) (api.StopResponse, error) {
				return api.StopResponse{}, errdefs.New(errdefs.CodeStopped, "already stopped")
			}},
			wantStdout:  "true\n",
			wantStderr:  "warning: stopping sandbox",
			wantMethods: []string{"Create", "Exec", "Stop"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := newHarness(t, tt.fake).run("", tt.args...)
			if code != tt.wantCode || out != tt.wantStdout || !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("code %d stdout %q stderr %q; want %d %q %q", code, out, errOut, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if got := tt.fake.Methods(); !reflect.DeepEqual(got, tt.wantMethods) {
				t.Errorf("calls %v, want %v", got, tt.wantMethods)
			}
			for _, c := range tt.fake.Calls() {
				switch req := c.Req.(type) {
				case api.ExecRequest:
					if req.SandboxID != id {
						t.Errorf("exec in %q, want %q", req.SandboxID, id)
					}
				case api.StopRequest:
					if req != (api.StopRequest{SandboxID: id}) {
						t.Errorf("stop %+v, want %s without wait", req, id)
					}
				}
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	fake := &functionstest.Fake{ExecFunc: func(ctx context.Context, _ api.ExecRequest) (api.ExecResponse, error) {
		interrupt()
		<-ctx.Done() // the request is abandoned
		return api.ExecResponse{}, ctx.Err()
	}}
	_, errOut, code := newHarness(t, fake).runContext(ctx, "", "run", "python", "--", "sleep", "100")
	if code != 130 || errOut != "hutch: interrupted\n" {
		t.Errorf("code %d stderr %q, want 130 and %q", code, errOut, "hutch: interrupted\n")
	}
	if got, want := fake.Methods(), []string{"Create", "Exec", "Stop"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v: the sandbox must be stopped after an interrupt", got, want)
	}
}

// TestRunPassesFlags checks where run's flags land: sandbox settings on the
// create, the timeout on the exec.
func TestRunPassesFlags(t *testing.T) {
	fake := &functionstest.Fake{}
	_, errOut, code := newHarness(t, fake).run("", "run", "python", "--cpus", "2", "--memory", "128", "--network",
		"-e", "A=1", "--timeout", "3s", "--", "python3", "-c", "1")
	if code != 0 {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	calls := fake.Calls()
	wantCreate := api.CreateRequest{Image: "python", CPUs: 2, MemoryMB: 128, Network: true, Env: api.Env{"A=1"}}
	wantExec := api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", "1"}, TimeoutMs: 3000}
	var gotCreate, gotExec any
	for _, c := range calls {
		switch c.Method {
		case "Create":
			gotCreate = c.Req
		case "Exec":
			gotExec = c.Req
		}
	}
	if !reflect.DeepEqual(gotCreate, wantCreate) || !reflect.DeepEqual(gotExec, wantExec) {
		t.Errorf("create %+v exec %+v; want %+v %+v", gotCreate, gotExec, wantCreate, wantExec)
	}
}

func TestList(t *testing.T) {
	name := "agent-1"
	sandboxes := []api.SandboxInfo{
		{SandboxID: id, Name: &name, Image: "python", AgeSecs: 125, ExecInFlight: 1},
		{SandboxID: "00000000-0000-4000-8000-000000000001", Image: "node", AgeSecs: 7200, Stopped: true, StopReason: "idle timeout"},
	}
	fake := &functionstest.Fake{ListFunc: func(context.Context, api.ListRequest) (api.ListResponse, error) {
		return api.ListResponse{Sandboxes: sandboxes}, nil
	}}
	h := newHarness(t, fake)

	out, errOut, code := h.run("", "list")
	want := "" +
		"ID                                     NAME      IMAGE    AGE   EXECS   STATUS\n" +
		"5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a00   agent-1   python   2m    1       running\n" +
		"00000000-0000-4000-8000-000000000001   -         node     2h    0       stopped (idle timeout)\n"
	if code != 0 || out != want {
		t.Errorf("list: code %d stderr %q stdout\n%s\nwant\n%s", code, errOut, out, want)
	}

	out, _, code = h.run("", "list", "--json")
	var got api.ListResponse
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !reflect.DeepEqual(got.Sandboxes, sandboxes) {
		t.Errorf("list --json: code %d err %v stdout %s", code, err, out)
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		args []string
		want api.StopRequest
	}{
		{[]string{"stop", id}, api.StopRequest{SandboxID: id}},
		{[]string{"stop", "--wait", id}, api.StopRequest{SandboxID: id, Wait: true}},
	}
	for _, tt := range tests {
		fake := &functionstest.Fake{}
		out, errOut, code := newHarness(t, fake).run("", tt.args...)
		if code != 0 || out != id+"\n" {
			t.Errorf("%v: code %d stdout %q stderr %q", tt.args, code, out, errOut)
		}
		if calls := fake.Calls(); len(calls) != 1 || calls[0].Req != tt.want {
			t.Errorf("%v: calls %+v, want %+v", tt.args, calls, tt.want)
		}
	}

	fake := &functionstest.Fake{StopFunc: func(_ context.Context, req api.StopRequest) (api.StopResponse, error) {
		return api.StopResponse{}, errdefs.New(errdefs.CodeNotFound, "no live sandbox with id %s", req.SandboxID)
	}}
	out, errOut, code := newHarness(t, fake).run("", "stop", id)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "hutch: S002: no live sandbox") {
		t.Errorf("stop of unknown id: code %d stdout %q stderr %q; want 1 and the S002 on stderr", code, out, errOut)
	}
}

// blockingCreate makes the fake build the image for a few polls before the
// create returns.
func blockingCreate(fake *functionstest.Fake, polls int32) {
	var n atomic.Int32
	ready := make(chan struct{})
	fake.ImageStatusFunc = func(_ context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
		if n.Add(1) == polls {
			close(ready)
		}
		if n.Load() >= polls {
			return api.ImageStatus{Name: req.Name, State: "ready"}, nil
		}
		return api.ImageStatus{Name: req.Name, State: "building", ElapsedSecs: 23.6}, nil
	}
	fake.CreateFunc = func(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
		select {
		case <-ready:
		case <-ctx.Done():
		}
		return api.CreateResponse{SandboxID: id, Image: req.Image}, nil
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		tty     bool
		want    []string // substrings of stderr, in order
		wantNot string
	}{
		{
			name:    "create, not a terminal",
			args:    []string{"create", "python"},
			want:    []string{"building image python…\n", "building image python… done in 24s\n"},
			wantNot: "\r",
		},
		{
			name: "create, terminal",
			args: []string{"create", "python"},
			tty:  true,
			want: []string{"\r\x1b[Kbuilding image python… 24s", "\r\x1b[Kbuilding image python… done in 24s\n"},
		},
		{
			name: "run",
			args: []string{"run", "python", "--", "true"},
			want: []string{"building image python…\n", "done in 24s\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &functionstest.Fake{}
			blockingCreate(fake, 4)
			h := newHarness(t, fake)
			h.tty["stderr"] = tt.tty
			out, errOut, code := h.run("", tt.args...)
			if code != 0 || out == "" {
				t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
			}
			rest := errOut
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr %q lacks %q (in order)", errOut, w)
				}
				rest = rest[i+len(w):]
			}
			if tt.wantNot != "" && strings.Contains(errOut, tt.wantNot) {
				t.Errorf("stderr %q contains %q", errOut, tt.wantNot)
			}
		})
	}
}

// countPolls counts the CLI's image status polls on fake, which answer
// as before (ready by default).
func countPolls(fake *functionstest.Fake) *atomic.Int32 {
	var n atomic.Int32
	next := fake.ImageStatusFunc
	fake.ImageStatusFunc = func(ctx context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
		n.Add(1)
		if next != nil {
			return next(ctx, req)
		}
		return api.ImageStatus{Name: req.Name, State: "ready"}, nil
	}
	return &n
}

// awaitPolls waits until the CLI has polled the image status at least
// want times; it fails the create (so the test) if it never does.
func awaitPolls(polls *atomic.Int32, want int32) error {
	if !testutil.Poll(30*time.Second, func() bool { return polls.Load() >= want }) {
		return fmt.Errorf("the CLI polled the image status %d times, want %d", polls.Load(), want)
	}
	return nil
}

func TestNoProgressForReadyImage(t *testing.T) {
	fake := &functionstest.Fake{}
	polls := countPolls(fake)
	fake.CreateFunc = func(_ context.Context, req api.CreateRequest) (api.CreateResponse, error) {
		if err := awaitPolls(polls, 3); err != nil { // several polls of a ready image
			return api.CreateResponse{}, err
		}
		return api.CreateResponse{SandboxID: id, Image: req.Image}, nil
	}
	_, errOut, code := newHarness(t, fake).run("", "create", "python")
	if code != 0 || errOut != "" {
		t.Errorf("code %d stderr %q, want 0 and nothing on stderr", code, errOut)
	}
}

func TestProgressClearedOnFailure(t *testing.T) {
	fake := &functionstest.Fake{}
	blockingCreate(fake, 1<<30) // never ready
	polls := countPolls(fake)
	fake.CreateFunc = func(context.Context, api.CreateRequest) (api.CreateResponse, error) {
		// The second poll begins once the first "building" is shown.
		if err := awaitPolls(polls, 2); err != nil {
			return api.CreateResponse{}, err
		}
		return api.CreateResponse{}, errdefs.New(errdefs.CodeImagePull, "mmdebstrap failed")
	}
	h := newHarness(t, fake)
	h.tty["stderr"] = true
	_, errOut, code := h.run("", "create", "python")
	if code != 1 || !strings.HasSuffix(errOut, "\r\x1b[Khutch: S102: mmdebstrap failed\n") || strings.Contains(errOut, "done") {
		t.Errorf("code %d stderr %q; want the progress line cleared before the S102", code, errOut)
	}
}

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) (string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr, addr
}

func TestAutoStart(t *testing.T) {
	url, addr := closedURL(t)
	fake := &functionstest.Fake{}
	h := &harness{t: t, fake: fake, tty: map[string]bool{},
		env: map[string]string{"HUTCH_URL": url, "HUTCH_DATA_DIR": "/data"}}
	var started []string
	h.startDaemon = func(dataDir, listen string) (string, <-chan error, error) {
		started = append(started, dataDir, listen)
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return "", nil, err
		}
		srv := &http.Server{Handler: httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return dataDir + "/hutch.log", make(chan error), nil
	}

	// Commands other than run and create never start a daemon.
	out, errOut, code := h.run("", "list")
	if code != 1 || out != "" || !strings.Contains(errOut, "hutch: no daemon at "+url) || len(started) != 0 {
		t.Fatalf("list without daemon: code %d stdout %q stderr %q started %v", code, out, errOut, started)
	}

	out, errOut, code = h.run("", "create", "python")
	wantMsg := "hutch: no daemon at " + url + "; started one in the background (log: /data/hutch.log)\n"
	if code != 0 || out != id+"\n" || errOut != wantMsg {
		t.Fatalf("create: code %d stdout %q stderr %q; want the id and %q", code, out, errOut, wantMsg)
	}
	if want := []string{"/data", addr}; !reflect.DeepEqual(started, want) {
		t.Errorf("started %v, want %v", started, want)
	}
}

// The package's unit runs the daemon: a command run while it (re)starts
// waits for its socket, and the CLI never starts a second daemon.
func TestCLIWaitsForTheUnitsSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hutch.sock")
	fake := &functionstest.Fake{}
	h := &harness{t: t, fake: fake, tty: map[string]bool{}, env: map[string]string{"HUTCH_SOCKET": sock}, healthWait: time.Minute}
	polls := 0
	h.serviceState = func() string {
		// The unit's daemon comes up on the third look, while the CLI waits.
		if polls++; polls == 3 {
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
		}
		return "activating"
	}
	out, errOut, code := h.run("", "create", "python")
	if code != 0 || out != id+"\n" || errOut != "" {
		t.Fatalf("create while the unit starts: code %d stdout %q stderr %q", code, out, errOut)
	}
	if polls < 3 {
		t.Errorf("the CLI looked at the unit %d times", polls)
	}
}

func TestNoAutoStartBesideTheUnit(t *testing.T) {
	url, _ := closedURL(t)
	for _, state := range []string{"inactive", "failed"} {
		h := &harness{t: t, fake: &functionstest.Fake{}, tty: map[string]bool{},
			env: map[string]string{"HUTCH_SOCKET": filepath.Join(t.TempDir(), "hutch.sock")}}
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return h.env[k] },
			serviceState: func() string { return state }, healthWait: time.Second,
			startDaemon: func(string, string) (string, <-chan error, error) {
				t.Errorf("a daemon was started beside a unit in state %s", state)
				return "", nil, errors.New("no start")
			}}
		err := a.autoStart(context.Background(), client.New(url, ""))
		if err == nil || !strings.Contains(err.Error(), "the hutch service is "+state+"; start it with `systemctl start hutch`") {
			t.Errorf("unit %s: %v", state, err)
		}
	}
}

func TestAutoStartedDaemonExits(t *testing.T) {
	url, _ := closedURL(t)
	h := &harness{t: t, fake: &functionstest.Fake{}, tty: map[string]bool{}, env: map[string]string{"HUTCH_URL": url}}
	h.startDaemon = func(dataDir, listen string) (string, <-chan error, error) {
		exited := make(chan error, 1)
		exited <- errors.New("exit status 1")
		return "/var/lib/hutch/hutch.log", exited, nil
	}
	start := time.Now()
	_, errOut, code := h.run("", "run", "python", "--", "true")
	if code != 125 || !strings.Contains(errOut, "exited (exit status 1); see /var/lib/hutch/hutch.log") {
		t.Errorf("code %d stderr %q; want 125 pointing at the log", code, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up", d)
	}
}

func TestAutoStartable(t *testing.T) {
	tests := []struct {
		url        string
		want       bool
		wantListen string
	}{
		{client.DefaultURL, true, "127.0.0.1:3111"},
		{"http://127.0.0.1:3111", true, "127.0.0.1:3111"},
		{"http://127.0.0.1:4000/", true, "127.0.0.1:4000"},
		{client.New("127.0.0.1:4001", "").URL(), true, "127.0.0.1:4001"},
		{"http://127.1.2.3:4000", true, "127.1.2.3:4000"},
		{"http://localhost:3111", true, "localhost:3111"},
		{"http://[::1]:3111", true, "[::1]:3111"},
		{"http://localhost", true, "localhost:80"},
		{"https://127.0.0.1:3111", false, ""},
		{"http://10.0.0.5:3111", false, ""},
		{"http://hutch.example.com:3111", false, ""},
		{"http://0.0.0.0:3111", false, ""},
		{"::not a url", false, ""},
	}
	for _, tt := range tests {
		if got := autoStartable(tt.url); got != tt.want {
			t.Errorf("autoStartable(%q) = %v, want %v", tt.url, got, tt.want)
		}
		if tt.want {
			if got := listenAddr(tt.url); got != tt.wantListen {
				t.Errorf("listenAddr(%q) = %q, want %q", tt.url, got, tt.wantListen)
			}
		}
	}
}

func TestFormatAge(t *testing.T) {
	tests := []struct {
		secs uint64
		want string
	}{
		{0, "0s"}, {59, "59s"}, {60, "1m"}, {3599, "59m"}, {3600, "1h"}, {47 * 3600, "47h"}, {3 * 86400, "3d"},
	}
	for _, tt := range tests {
		if got := formatAge(tt.secs); got != tt.want {
			t.Errorf("formatAge(%d) = %q, want %q", tt.secs, got, tt.want)
		}
	}
}
