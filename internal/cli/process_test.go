package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// processFake answers the process calls the way a sandbox with one
// background process, pid 7, would.
func processFake() *functionstest.Fake {
	return &functionstest.Fake{ProcessFunc: func(_ context.Context, method string, req any) (any, error) {
		switch method {
		case "StartProcess":
			return api.ProcessStartResponse{Pid: 7}, nil
		case "ListProcesses":
			return api.ProcessListResponse{Processes: []api.ProcessEntry{
				{Pid: 7, Ppid: 1, User: "root", Command: "evil \x1b[2Jname", State: "S", RSSBytes: 3 << 20, Hutch: true, Tag: "web"},
				{Pid: 8, Ppid: 7, User: "1000", Command: "child", State: "R", CPUPercent: 12.5},
			}}, nil
		case "ProcessOutput":
			return api.ProcessOutputResponse{Stdout: api.OutputChunk{Data: "out\n"}, Stderr: api.OutputChunk{Data: "ZXJyCg==", Base64: true, Dropped: 5}}, nil
		case "KillProcess":
			if req.(api.ProcessRequest).Pid == 7 {
				return api.ProcessSignalResponse{Pid: 7, Signal: "KILL"}, nil
			}
		case "SignalProcess":
			return api.ProcessSignalResponse{Pid: 7, Signal: req.(api.ProcessSignalRequest).Signal}, nil
		}
		return nil, errdefs.New(errdefs.CodeProcessNotFound, "no process")
	}}
}

func TestProcessCommands(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // substrings
		wantStderr string   // substring
		wantMethod string
		wantReq    any
	}{
		{name: "exec -d prints the pid", args: []string{"exec", "-d", "--tag", "web", "-i", id, "--", "python3", "-m", "http.server"},
			wantStdout: []string{"7\n"}, wantMethod: "StartProcess",
			wantReq: api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-m", "http.server"}, Stdin: true, Tag: "web"}},
		{name: "exec -dt asks for a terminal", args: []string{"exec", "-dt", id, "--", "sh"},
			wantStdout: []string{"7\n"}, wantMethod: "StartProcess",
			wantReq: api.ProcessStartRequest{SandboxID: id, Argv: []string{"sh"}, Pty: &api.PtySize{Cols: 80, Rows: 24}}},
		{name: "ps escapes what the sandbox chose", args: []string{"ps", id},
			wantStdout: []string{"PID", "7*", "web", `evil \x1b[2Jname`, "3.0MB", "12.5", "child"}, wantMethod: "ListProcesses",
			wantReq: api.ProcessListRequest{SandboxID: id}},
		{name: "logs prints both streams and the gap", args: []string{"logs", id, "7"},
			wantStdout: []string{"out\n"}, wantStderr: "5 bytes of stderr were dropped", wantMethod: "ProcessOutput",
			wantReq: api.ProcessOutputRequest{SandboxID: id, Pid: 7}},
		{name: "kill kills", args: []string{"kill", id, "7"},
			wantStdout: []string{"7 KILL\n"}, wantMethod: "KillProcess", wantReq: api.ProcessRequest{SandboxID: id, Pid: 7}},
		{name: "kill -s signals", args: []string{"kill", "-s", "TERM", id, "7"},
			wantStdout: []string{"7 TERM\n"}, wantMethod: "SignalProcess", wantReq: api.ProcessSignalRequest{SandboxID: id, Pid: 7, Signal: "TERM"}},
		{name: "an unknown pid", args: []string{"kill", id, "9"}, wantCode: 1, wantStderr: "S230"},
		{name: "a pid that is not one", args: []string{"logs", id, "x"}, wantCode: 2, wantStderr: `PID must be a process id, not "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := processFake()
			out, errOut, code := newHarness(t, fake).run("", tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantStderr) {
				t.Fatalf("code %d stderr %q; want %d and %q", code, errOut, tt.wantCode, tt.wantStderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(out, want) {
					t.Errorf("stdout %q lacks %q", out, want)
				}
			}
			if tt.wantMethod == "" {
				return
			}
			calls := fake.CallsOf(tt.wantMethod)
			if len(calls) != 1 || !reflect.DeepEqual(calls[0].Req, tt.wantReq) {
				t.Errorf("calls of %s: %+v; want one with %+v", tt.wantMethod, calls, tt.wantReq)
			}
		})
	}
}

func TestExecPrintsAsItStreams(t *testing.T) {
	fake := &functionstest.Fake{ExecFunc: func(context.Context, api.ExecRequest) (api.ExecResponse, error) {
		return api.ExecResponse{Stdout: "out\n", Stderr: "err\n", ExitCode: exitCode(4)}, nil
	}}
	out, errOut, code := newHarness(t, fake).run("", "exec", id, "--", "sh")
	if out != "out\n" || errOut != "err\n" || code != 4 {
		t.Fatalf("stdout %q stderr %q code %d", out, errOut, code)
	}
}

// TestLogPrinter: combined log lines start with their source's tag and
// pid, stderr marked; a source's unfinished line is ended on screen
// before another source's; a tag cannot write control characters.
func TestLogPrinter(t *testing.T) {
	var out bytes.Buffer
	p := &logPrinter{out: &out, partial: map[logSource]bool{}}
	line := func(pid int, tag, stream, data string) {
		t.Helper()
		b, _ := json.Marshal(api.LogLine{Pid: pid, Tag: tag, Stream: stream, OutputChunk: api.OutputChunk{Data: data}})
		if err := p.event(api.EventLog, b); err != nil {
			t.Fatal(err)
		}
	}
	line(7, "web", api.EventStdout, "one\ntw")
	line(9, "", api.EventStderr, "oops\n")
	line(7, "web", api.EventStdout, "o\n")
	line(8, "x\x1b[2J", api.EventStdout, "hi\n")
	code := 3
	b, _ := json.Marshal(api.ProcessInfo{Pid: 9, ExitCode: &code})
	if err := p.event(api.EventExit, b); err != nil {
		t.Fatal(err)
	}
	want := "web 7 | one\nweb 7 | tw\n9 ! | oops\nweb 7 | o\nx\\x1b[2J 8 | hi\n9 | [exit 3]\n"
	if out.String() != want {
		t.Errorf("printed %q\nwant    %q", out.String(), want)
	}
}
