package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// code is err's S-code, "" for none.
func code(err error) errdefs.Code {
	var e *errdefs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestBackgroundProcessLifecycle(t *testing.T) {
	m, _, _ := inprocess(t, func(c *config.Config) { c.MaxProcessesPerSandbox = 2 })
	id := create(t, m, api.CreateRequest{Image: "python"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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

func TestProcessOutputIsActivity(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	silent := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 60})
	chatty := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 60})
	gate := filepath.Join(t.TempDir(), "gate")
	start := func(id string, argv ...string) int {
		st, err := m.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: argv})
		if err != nil {
			t.Fatalf("start %q: %v", argv, err)
		}
		return st.Pid
	}
	start(silent, "sleep", "1000")
	pid := start(chatty, "sh", "-c", `echo one; while [ ! -e "$0" ]; do sleep 0.02; done; echo two; exec sleep 1000`, gate)
	wrote := func(n int64) func() bool {
		return func() bool {
			info, err := m.GetProcess(ctx, api.ProcessRequest{SandboxID: chatty, Pid: pid})
			return err == nil && info.StdoutBytes >= n
		}
	}
	alive := func(id string) bool {
		_, err := m.Get(ctx, api.GetRequest{SandboxID: id})
		return err == nil
	}
	// Each pass looks at a time past both idle timeouts: only new output
	// since the last pass keeps a sandbox.
	pass := func() {
		m.reaper.reap(time.Now().Add(2 * time.Minute))
		m.destroying.Wait()
	}

	testutil.Eventually(t, 30*time.Second, wrote(int64(len("one\n"))), "first line")
	pass()
	if alive(silent) || !alive(chatty) {
		t.Fatalf("after a pass: silent alive %v (want false), chatty alive %v (want true)", alive(silent), alive(chatty))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, wrote(int64(len("one\ntwo\n"))), "second line")
	pass()
	if !alive(chatty) {
		t.Fatal("a sandbox whose process wrote since the last pass was reaped")
	}
	pass()
	if alive(chatty) {
		t.Fatal("a sandbox silent since the last pass was not reaped")
	}
}

// TestLogsCombineProcesses: the logs of a sandbox are its background
// processes' output tagged with pid and tag; followed, a process started
// later joins, each exit is told, and the sandbox's stop ends the stream
// with S004.
func TestLogsCombineProcesses(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	id := create(t, m, api.CreateRequest{Image: "python"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: id, Wait: true}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-ended, errdefs.CodeStopped)
}
