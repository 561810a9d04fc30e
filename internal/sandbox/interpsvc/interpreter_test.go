package interpsvc

import (
	"context"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/procsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// The service over a real core on the in-process runtime, which runs the
// kernels on this host (python3, node and bash) as real background
// processes of the agent; the process service (procsvc) runs them.

// withCore is the service over a real core, which tells it the sandboxes
// it tore down as the daemon wires it, and a running sandbox of image
// python.
func withCore(t *testing.T) (*Service, *sandbox.Manager, string) {
	t.Helper()
	cfg := config.Default()
	cfg.WarmPoolAuto = false
	m := sandboxtest.NewManager(t, sandbox.Options{Config: cfg})
	procs := procsvc.New(m, procsvc.LimitsOf(cfg))
	s := New(m, procs, cfg, m.Done())
	m.OnTeardown(s.Forget)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.Create(ctx, api.CreateRequest{Image: "python"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return s, m, resp.SandboxID
}

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

// cell runs code and returns its output and result.
func cell(t *testing.T, m *Service, req api.RunCodeRequest) (string, api.CellResult) {
	t.Helper()
	var out strings.Builder
	res, err := m.RunCode(context.Background(), req, func(event string, data any) error {
		if c, ok := data.(api.OutputChunk); ok {
			out.WriteString(event + ":" + c.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cell %q: %v", req.Code, err)
	}
	return out.String(), res
}

func TestInterpreterKeepsStateAcrossCells(t *testing.T) {
	m, _, id := withCore(t)
	if _, res := cell(t, m, api.RunCodeRequest{SandboxID: id, Code: "x = 41"}); res.Status != "ok" || res.Data != nil {
		t.Fatalf("x = 41: %+v", res)
	}
	out, res := cell(t, m, api.RunCodeRequest{SandboxID: id, Code: "import sys\nprint('hi')\nprint('err', file=sys.stderr)\nx + 1"})
	if res.Data["text/plain"] != "42" || res.ExecutionCount != 2 || !strings.Contains(out, "stdout:hi") || !strings.Contains(out, "stderr:err") {
		t.Fatalf("x + 1: %q %+v", out, res)
	}
	// An exception is a result; the next cell still sees x.
	if _, res := cell(t, m, api.RunCodeRequest{SandboxID: id, Code: "raise ValueError('no')"}); res.Status != "error" || res.Error.Name != "ValueError" || res.Error.Value != "no" {
		t.Fatalf("raise: %+v", res)
	}
	if _, res := cell(t, m, api.RunCodeRequest{SandboxID: id, Code: "x"}); res.Data["text/plain"] != "41" {
		t.Fatalf("x after an error: %+v", res)
	}
	list, err := m.ListContexts(context.Background(), api.ContextListRequest{SandboxID: id})
	if err != nil || len(list.Contexts) != 1 || !list.Contexts[0].Default || list.Contexts[0].Language != "python" || list.Contexts[0].ExecutionCount != 4 {
		t.Fatalf("contexts %+v %v", list, err)
	}
	// Bash keeps cd and exports, in a context of its own.
	if _, err := osexec.LookPath("bash"); err == nil {
		cell(t, m, api.RunCodeRequest{SandboxID: id, Language: "bash", Code: "cd /tmp; export V=7"})
		if out, res := cell(t, m, api.RunCodeRequest{SandboxID: id, Language: "bash", Code: "echo $PWD $V"}); out != "stdout:/tmp 7\n" || *res.ExitCode != 0 {
			t.Fatalf("bash: %q %+v", out, res)
		}
	}
}

func TestInterpreterInterruptsAndRestarts(t *testing.T) {
	m, _, id := withCore(t)
	ctx := context.Background()
	info, err := m.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id, Language: "python", Env: api.Env{"GREETING=hey"}})
	if err != nil {
		t.Fatal(err)
	}
	cell(t, m, api.RunCodeRequest{ContextID: info.ContextID, Code: "import os\ny = os.environ['GREETING']"})
	// A cell past its timeout is interrupted; the context lives on.
	_, res := cell(t, m, api.RunCodeRequest{ContextID: info.ContextID, Code: "while True: pass", TimeoutMs: 300})
	if !res.TimedOut || res.Error == nil || res.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("an endless loop: %+v", res)
	}
	// An interrupt stops a running cell.
	done := make(chan api.CellResult, 1)
	go func() {
		_, res := cell(t, m, api.RunCodeRequest{ContextID: info.ContextID, Code: "import time\ntime.sleep(60)"})
		done <- res
	}()
	testutil.Eventually(t, 30*time.Second, func() bool {
		l, _ := m.ListContexts(ctx, api.ContextListRequest{SandboxID: id})
		return len(l.Contexts) == 1 && l.Contexts[0].State == api.ContextBusy
	}, "the cell runs")
	if r, err := m.Interrupt(ctx, api.ContextRequest{ContextID: info.ContextID}); err != nil || !r.Running {
		t.Fatalf("interrupt: %+v %v", r, err)
	}
	if res := <-done; res.Error == nil || res.Error.Name != "KeyboardInterrupt" || res.TimedOut {
		t.Fatalf("the interrupted cell: %+v", res)
	}
	if _, res := cell(t, m, api.RunCodeRequest{ContextID: info.ContextID, Code: "y"}); res.Data["text/plain"] != "'hey'" {
		t.Fatalf("state after interrupts: %+v", res)
	}
	// A cell that ends the interpreter leaves the context dead (S241)
	// until it is restarted, empty.
	_, err = m.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "import os\nos._exit(3)"}, func(string, any) error { return nil })
	wantCode(t, err, errdefs.CodeContextDead)
	_, err = m.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "1"}, func(string, any) error { return nil })
	wantCode(t, err, errdefs.CodeContextDead)
	if info, err := m.RestartContext(ctx, api.ContextRequest{ContextID: info.ContextID}); err != nil || info.State != api.ContextIdle {
		t.Fatalf("restart: %+v %v", info, err)
	}
	if _, res := cell(t, m, api.RunCodeRequest{ContextID: info.ContextID, Code: "'y' in dir()"}); res.Data["text/plain"] != "False" || res.ExecutionCount != 1 {
		t.Fatalf("after a restart: %+v", res)
	}
	if _, err := m.DeleteContext(ctx, api.ContextRequest{ContextID: info.ContextID}); err != nil {
		t.Fatal(err)
	}
	_, err = m.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "1"}, func(string, any) error { return nil })
	wantCode(t, err, errdefs.CodeNoContext)
}

// TestTimeoutInterruptsForItsOwner: the interrupt a timed-out cell gets
// acts for the sandbox's owner (a call with no owner is refused S002 for
// an owned sandbox, and the kernel would spin on); the context lives on.
func TestTimeoutInterruptsForItsOwner(t *testing.T) {
	s, m, _ := withCore(t)
	alice := as("alice")
	created, err := m.Create(alice, api.CreateRequest{Image: "python"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.CreateContext(alice, api.ContextCreateRequest{SandboxID: created.SandboxID, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(code string, timeoutMs uint64) api.CellResult {
		t.Helper()
		res, err := s.RunCode(alice, api.RunCodeRequest{ContextID: info.ContextID, Code: code, TimeoutMs: timeoutMs}, func(string, any) error { return nil })
		if err != nil {
			t.Fatalf("cell %q: %v", code, err)
		}
		return res
	}
	// 1 ms: the interrupt may come before the kernel reads the cell (a
	// fresh kernel is ready, its SIGINT its own, once the context is
	// made), and is sent again until the cell stops.
	if res := run("while True: pass", 1); !res.TimedOut || res.Error == nil || res.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("an endless loop of alice's: %+v", res)
	}
	if res := run("1 + 1", 0); res.Data["text/plain"] != "2" {
		t.Fatalf("the next cell: %+v", res)
	}
}

func TestInterpreterRefusals(t *testing.T) {
	m, _, id := withCore(t)
	ctx := context.Background()
	info, err := m.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	// Another owner: as if it did not exist.
	_, err = m.RunCode(as("mallory"), api.RunCodeRequest{ContextID: info.ContextID, Code: "1"}, func(string, any) error { return nil })
	wantCode(t, err, errdefs.CodeNoContext)
	_, err = m.DeleteContext(as("mallory"), api.ContextRequest{ContextID: info.ContextID})
	wantCode(t, err, errdefs.CodeNoContext)
	for name, req := range map[string]api.ContextCreateRequest{
		"language": {SandboxID: id, Language: "cobol"},
		"cwd":      {SandboxID: id, Cwd: "relative"},
		"env":      {SandboxID: id, Env: api.Env{"=x"}},
	} {
		if _, err := m.CreateContext(ctx, req); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
	_, err = m.RunCode(ctx, api.RunCodeRequest{Code: "1"}, nil)
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = m.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Language: "bash", Code: "1"}, nil)
	wantCode(t, err, errdefs.CodeMalformed)
}

// A sandbox's contexts end with it: once its teardown is over, a call on
// one finds no context (as the core finds only the sandbox's tombstone).
func TestInterpreterForgetsStoppedSandbox(t *testing.T) {
	s, m, id := withCore(t)
	ctx := context.Background()
	info, err := s.CreateContext(ctx, api.ContextCreateRequest{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	cell(t, s, api.RunCodeRequest{ContextID: info.ContextID, Code: "1"})
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RunCode(ctx, api.RunCodeRequest{ContextID: info.ContextID, Code: "1"}, nil)
	wantCode(t, err, errdefs.CodeNoContext)
	_, err = s.ListContexts(ctx, api.ContextListRequest{SandboxID: id})
	wantCode(t, err, errdefs.CodeStopped)
}

func TestInstallRefusals(t *testing.T) {
	s, _, id := withCore(t)
	ctx := context.Background()
	for name, req := range map[string]api.InstallRequest{
		"manager":     {SandboxID: id, Manager: "apt", Packages: []string{"curl"}},
		"no packages": {SandboxID: id, Manager: "pip"},
		"an option":   {SandboxID: id, Manager: "pip", Packages: []string{"--index-url=http://evil"}},
		"a path":      {SandboxID: id, Manager: "npm", Packages: []string{"../x"}},
	} {
		if _, err := s.Install(ctx, req, nil); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The sandbox has no network to reach an index with.
	_, err := s.Install(ctx, api.InstallRequest{SandboxID: id, Manager: "pip", Packages: []string{"requests==2.32.3"}}, nil)
	if e := errdefs.As(err); e == nil || e.Code != errdefs.CodeMalformed || !strings.Contains(e.Message, "has no network") {
		t.Fatalf("install without a network: %v", err)
	}
	_, err = s.Install(as("mallory"), api.InstallRequest{SandboxID: id, Manager: "pip", Packages: []string{"requests"}}, nil)
	wantCode(t, err, errdefs.CodeNotFound)
}

func TestInstallArgv(t *testing.T) {
	check, argv := installArgv(managerPip, "http://10.99.0.1:3141/simple", []string{"requests"})
	want := "python3 -m pip install --no-input --disable-pip-version-check --break-system-packages --root-user-action=ignore " +
		"--index-url http://10.99.0.1:3141/simple --trusted-host 10.99.0.1 -- requests"
	if strings.Join(check, " ") != "python3 -c import pip" || strings.Join(argv, " ") != want {
		t.Errorf("pip: %q %q", check, argv)
	}
	check, argv = installArgv(managerNpm, "", []string{"left-pad@1.3.0"})
	if strings.Join(check, " ") != "sh -c command -v npm" || strings.Join(argv, " ") != "npm install --no-audit --no-fund --no-update-notifier left-pad@1.3.0" {
		t.Errorf("npm: %q %q", check, argv)
	}
}
