package procsvc

// The processes service over the fake core (sandboxtest) whose sandbox
// has a real in-process agent: its processes are real processes of this
// host, without root or gVisor.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// The service fills the Processes slot of functions.Deps, and its logs.
var (
	_ functions.Processes   = (*Service)(nil)
	_ functions.ProcessLogs = (*Service)(nil)
)

// limits are the daemon's defaults but for two background processes.
var limits = Limits{MaxProcesses: 2, MaxPtys: 8, RingBytes: 1 << 20, MaxWaitMs: 60_000}

// withAgent is the service over a fake core holding one running sandbox
// of owner "ann" with a real agent: the service, the fake, the sandbox and
// a context of its owner that ends with the test.
func withAgent(t *testing.T) (*Service, *sandboxtest.Sandboxes, *sandboxtest.Sandbox, context.Context) {
	t.Helper()
	sbs := &sandboxtest.Sandboxes{}
	sb := sbs.Add("ann")
	sb.Agent = agenttest.Start(t, agent.Options{Version: "test"}, agentclient.Options{MaxOutputBytes: 1 << 20, CallTimeout: 10 * time.Second}).Client
	t.Cleanup(func() {
		if n := sbs.Held(); n != 0 {
			t.Errorf("%d handles not released", n)
		}
	})
	ctx, cancel := context.WithTimeout(auth.WithOwner(context.Background(), "ann"), time.Minute)
	t.Cleanup(cancel)
	return New(sbs, limits), sbs, sb, ctx
}

// code is err's S-code, "" for none.
func code(err error) errdefs.Code {
	var e *errdefs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestBackgroundProcessLifecycle(t *testing.T) {
	m, _, sb, ctx := withAgent(t)
	id := sb.ID
	gate := filepath.Join(t.TempDir(), "gate")

	// A process that prints, waits for the gate, reads a line of stdin,
	// prints it and exits 3: it outlives the call that started it.
	st, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "worker", Stdin: true,
		Argv: []string{"sh", "-c", `echo ready; while [ ! -e "$0" ]; do sleep 0.02; done; read l; echo "got $l"; echo oops >&2; exit 3`, gate}})
	if err != nil || st.Pid <= 0 {
		t.Fatalf("start: %+v, %v", st, err)
	}
	info, err := m.GetProcess(ctx, api.ProcessRequest{SandboxID: id, Pid: st.Pid})
	if err != nil || info.State != api.ProcessRunning || info.Tag != "worker" || !info.Stdin {
		t.Fatalf("get: %+v, %v", info, err)
	}
	// Following from the start sees the first line while the process
	// still waits for the gate.
	lines := make(chan string, 16)
	followed := make(chan api.ProcessInfo, 1)
	go func() {
		end, err := m.FollowProcess(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: st.Pid}, func(ev string, data any) error {
			if c, ok := data.(api.OutputChunk); ok {
				lines <- ev + ":" + c.Data
			}
			return nil
		})
		if err != nil {
			t.Errorf("follow: %v", err)
		}
		followed <- end
	}()
	if got := <-lines; got != "stdout:ready\n" {
		t.Fatalf("first output %q", got)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: st.Pid, Data: "hel"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: st.Pid, Data: "bG8K", Base64: true, Close: true}); err != nil {
		t.Fatal(err)
	}
	end := <-followed
	if end.State != api.ProcessExited || end.ExitCode == nil || *end.ExitCode != 3 {
		t.Fatalf("end of follow: %+v", end)
	}
	out, err := m.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: st.Pid, StdoutOffset: 6})
	if err != nil || out.Stdout.Data != "got hello\n" || out.Stdout.Offset != 6 || out.Stderr.Data != "oops\n" {
		t.Fatalf("output from offset 6: %+v, %v", out, err)
	}

	// Errors: each its code, and nothing changes.
	if _, err := m.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: st.Pid}); code(err) != errdefs.CodeProcessExited {
		t.Errorf("signal to an exited process: %v", err)
	}
	if _, err := m.GetProcess(ctx, api.ProcessRequest{SandboxID: id, Pid: 999999}); code(err) != errdefs.CodeProcessNotFound {
		t.Errorf("unknown pid: %v", err)
	}
	if _, err := m.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: st.Pid, Signal: "NOPE"}); code(err) != errdefs.CodeMalformed {
		t.Errorf("bad signal: %v", err)
	}
	sleeper, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: sleeper.Pid, Data: "x"}); code(err) != errdefs.CodeNoStdin {
		t.Errorf("stdin to a process without: %v", err)
	}
	if _, err := m.ResizeProcess(ctx, api.ProcessResizeRequest{SandboxID: id, Pid: sleeper.Pid, PtySize: api.PtySize{Cols: 80, Rows: 24}}); code(err) != errdefs.CodeNotPty {
		t.Errorf("resize of a process without a terminal: %v", err)
	}
	// The limit counts live processes: the exited one's place is free.
	second, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatalf("second live process: %v", err)
	}
	if _, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"true"}}); code(err) != errdefs.CodeProcessLimit {
		t.Errorf("third live process: %v, want S234", err)
	}
	if _, err := m.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: sleeper.Pid, Signal: "INT"}); err != nil {
		t.Fatal(err)
	}
	killed, err := m.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: sleeper.Pid})
	if err != nil || killed.ExitCode == nil || *killed.ExitCode != 130 || killed.Signal != "INT" {
		t.Fatalf("wait after SIGINT: %+v, %v", killed, err)
	}
	if _, err := m.KillProcess(ctx, api.ProcessRequest{SandboxID: id, Pid: second.Pid}); err != nil {
		t.Fatal(err)
	}
	running, err := m.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: second.Pid})
	if err != nil || running.State != api.ProcessExited || *running.ExitCode != 137 {
		t.Fatalf("wait after kill: %+v, %v", running, err)
	}
}

func TestExecStreamSendsOutputAsWritten(t *testing.T) {
	m, _, sb, ctx := withAgent(t)
	id := sb.ID
	gate := filepath.Join(t.TempDir(), "gate")
	var events []string
	res, err := m.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", `echo one; while [ ! -e "$0" ]; do sleep 0.02; done; printf '\377' >&2; exit 4`, gate}},
		func(ev string, data any) error {
			switch d := data.(type) {
			case api.ProcessStartResponse:
				events = append(events, ev)
			case api.OutputChunk:
				events = append(events, ev+":"+d.Data)
				if d.Data == "one\n" {
					// It arrived while the command waits for the gate.
					return os.WriteFile(gate, nil, 0o600)
				}
			case api.ExecResponse:
				events = append(events, ev)
			}
			return nil
		})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 4 || res.Success {
		t.Fatalf("exec stream: %+v, %v", res, err)
	}
	if got := strings.Join(events, "|"); got != "start|stdout:one\n|stderr:/w==|exit" {
		t.Fatalf("events %q", got)
	}
}

// TestLogsCombineProcesses: the logs of a sandbox are its background
// processes' output tagged with pid and tag; followed, a process started
// later joins, each exit is told, and the sandbox's stop ends the stream
// with S004.
func TestLogsCombineProcesses(t *testing.T) {
	m, sbs, sb, ctx := withAgent(t)
	id := sb.ID
	start := func(tag, script string) int {
		t.Helper()
		st, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: tag, Argv: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		return st.Pid
	}
	web := start("web", "echo listening; echo warn >&2")
	if _, err := m.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: web, TimeoutMs: 30000}); err != nil {
		t.Fatal(err)
	}
	var lines []api.LogLine
	collect := func(event string, data any) error {
		if l, ok := data.(api.LogLine); ok {
			lines = append(lines, l)
		}
		return nil
	}
	if err := m.StreamLogs(ctx, api.LogsRequest{SandboxID: id}, collect); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0] != (api.LogLine{Pid: web, Tag: "web", Stream: api.EventStdout, OutputChunk: api.OutputChunk{Data: "listening\n"}}) ||
		lines[1].Stream != api.EventStderr || lines[1].Data != "warn\n" {
		t.Fatalf("logs %+v", lines)
	}
	lines = nil
	if err := m.StreamLogs(ctx, api.LogsRequest{SandboxID: id, Tag: "other"}, collect); err != nil || len(lines) != 0 {
		t.Fatalf("logs of tag other: %+v %v", lines, err)
	}

	// Followed: what web holds, then a worker started later, with exits.
	events := make(chan any, 64)
	ended := make(chan error, 1)
	go func() {
		ended <- m.StreamLogs(ctx, api.LogsRequest{SandboxID: id, Follow: true}, func(event string, data any) error {
			events <- data
			return nil
		})
	}()
	next := func() any {
		t.Helper()
		select {
		case d := <-events:
			return d
		case <-ctx.Done():
			t.Fatal("no log event")
		}
		return nil
	}
	next() // open
	got := map[string]bool{}
	for len(got) < 3 {
		switch d := next().(type) {
		case api.LogLine:
			got[d.Data] = true
		case api.ProcessInfo:
			got["exit "+d.Tag] = d.Pid == web
		}
	}
	if !got["listening\n"] || !got["warn\n"] || !got["exit web"] {
		t.Fatalf("followed %v", got)
	}
	worker := start("worker", "echo working")
	for seen := false; !seen; {
		if l, ok := next().(api.LogLine); ok {
			seen = l.Pid == worker && l.Tag == "worker" && l.Data == "working\n"
		}
	}
	h, release, err := sbs.Acquire(ctx, id, sandbox.UseRecord)
	if err != nil {
		t.Fatal(err)
	}
	h.Stop(runtime.End{Cause: runtime.CauseRequest})
	release()
	if err := <-ended; !errdefs.Is(err, errdefs.CodeStopped) {
		t.Fatalf("the stream of a stopped sandbox ended with %v, want S004", err)
	}
}

// TestEventsOfABackgroundProcess: starting a background process and its
// exit are events, the exit with its code.
func TestEventsOfABackgroundProcess(t *testing.T) {
	m, sbs, sb, ctx := withAgent(t)
	st, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.ID, Tag: "job", Argv: []string{"sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	var events []sandboxtest.Event
	testutil.Eventually(t, 30*time.Second, func() bool {
		events = sbs.Snapshot(sb).Events
		return len(events) == 2
	}, "process.exited is emitted")
	started, _ := events[0].Data.(map[string]any)
	if events[0].Type != api.EventProcessStarted || started["pid"] != st.Pid || started["tag"] != "job" || started["command"] != "sh" {
		t.Errorf("first event %+v, want process.started of pid %d", events[0], st.Pid)
	}
	ended, _ := events[1].Data.(map[string]any)
	if events[1].Type != api.EventProcessExited || ended["pid"] != st.Pid || ended["exit_code"] != int32(3) {
		t.Errorf("second event %+v, want process.exited of pid %d with code 3", events[1], st.Pid)
	}
}

// TestBookEndsWithItsSandbox: each sandbox has its own book (its own
// limits and tags), forgotten once the sandbox has ended.
func TestBookEndsWithItsSandbox(t *testing.T) {
	m, sbs, sb, ctx := withAgent(t)
	other := sbs.Add("ann")
	other.Agent = sb.Agent
	for range limits.MaxProcesses {
		if _, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.ID, Argv: []string{"sleep", "60"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.ID, Argv: []string{"true"}}); code(err) != errdefs.CodeProcessLimit {
		t.Fatalf("a process past the limit: %v, want S234", err)
	}
	if _, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: other.ID, Tag: "mine", Argv: []string{"sleep", "60"}}); err != nil {
		t.Fatalf("another sandbox's process: %v", err)
	}
	h, release, err := sbs.Acquire(ctx, sb.ID, sandbox.UseRecord)
	if err != nil {
		t.Fatal(err)
	}
	h.Stop(runtime.End{Cause: runtime.CauseRequest})
	release()
	testutil.Eventually(t, 30*time.Second, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.books[sb.ID] == nil && m.books[other.ID] != nil
	}, "the stopped sandbox's book is forgotten, the other's kept")
}

// TestFailMapsAProcessRefusal: the agent's refusal for a process that is
// not there is S230 and leaves the sandbox running; an agent that broke
// goes through the failure policy (Handle.Fail), which ends it.
func TestFailMapsAProcessRefusal(t *testing.T) {
	_, sbs, sb, ctx := withAgent(t)
	h, release, err := sbs.Acquire(ctx, sb.ID, sandbox.UseCall)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	events, err := h.Agent().Attach(ctx, &agentv1.AttachRequest{Pid: 999999})
	if err == nil {
		_, err = events.Recv()
		events.Close()
	}
	if got := code(Fail(ctx, h, "following a process", 999999, err)); got != errdefs.CodeProcessNotFound {
		t.Fatalf("a process that is not there: %s, want %s", got, errdefs.CodeProcessNotFound)
	}
	if st := h.State(); st != sandbox.Running {
		t.Fatalf("a process that is not there ended the sandbox: %s", st)
	}
	if got := code(Fail(ctx, h, "following a process", 1, errors.New("garbage"))); got != errdefs.CodeStopped {
		t.Fatalf("an agent that broke: %s, want %s", got, errdefs.CodeStopped)
	}
	if f := sbs.Snapshot(sb).Failures; len(f) != 1 || f[0] != "following a process" {
		t.Fatalf("failures %v, want the one that went through Fail", f)
	}
}
