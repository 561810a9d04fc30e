package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Streaming tests never rely on timing: a command prints a line, then waits
// for a gate file the test creates through the API, then prints the next.
// Reading a line before opening its gate proves it arrived while the
// command ran.

// gatedScript prints line1..lineN on stdout (and "warn" once on stderr, and
// one byte that is not UTF-8), each after the gate /tmp/<name>-<i-1> exists,
// then exits 5.
func gatedScript(name string, n int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`echo warn >&2; i=1; while [ $i -le %d ]; do echo line$i; `+
		`while [ ! -e /tmp/%s-$i ]; do sleep 0.02; done; i=$((i+1)); done; printf '\377'; exit 5`, n, name)}
}

// openGate lets a gated script go on past line i.
func (d *daemon) openGate(id, name string, i int) {
	d.t.Helper()
	d.setup(id, "touch", fmt.Sprintf("/tmp/%s-%d", name, i))
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	typ  string
	data json.RawMessage
	id   string
}

// readSSE parses an SSE body into events until it ends.
func readSSE(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case line == "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

// next returns the next event, failing when the stream ends or stalls.
func nextEvent(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended early")
		}
		return ev
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60 s")
	}
	return sseEvent{}
}

// chunkBytes decodes an OutputChunk event.
func chunkBytes(t *testing.T, data json.RawMessage) []byte {
	t.Helper()
	var c api.OutputChunk
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("chunk %s: %v", data, err)
	}
	return []byte(chunkText(t, c))
}

// chunkText is the bytes of an OutputChunk.
func chunkText(t *testing.T, c api.OutputChunk) string {
	t.Helper()
	if !c.Base64 {
		return c.Data
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		t.Fatalf("chunk %q: %v", c.Data, err)
	}
	return string(b)
}

// streamedExec posts an exec that answers with SSE.
func (d *daemon) streamedExec(ctx context.Context, id string, argv []string) *http.Response {
	d.t.Helper()
	body, _ := json.Marshal(api.ExecRequest{SandboxID: id, Argv: argv})
	req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/v1/sandboxes/"+id+"/exec", bytes.NewReader(body))
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		d.t.Fatalf("streamed exec: %s %s", resp.Status, b)
	}
	return resp
}

// running reports whether sandbox id has a process with pid.
func (d *daemon) running(id string, pid int) bool {
	d.t.Helper()
	list, err := d.c.ListProcesses(context.Background(), id)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, p := range list.Processes {
		if p.Pid == pid {
			return true
		}
	}
	return false
}

func TestProcesses(t *testing.T) {
	d := startDaemon(t, baseConfig("max_processes_per_sandbox: 4\nmax_ptys_per_sandbox: 2\n"))
	id := d.create(api.CreateRequest{Image: "python"})
	ctx := context.Background()

	t.Run("SSE exec streams as written", func(t *testing.T) {
		resp := d.streamedExec(ctx, id, gatedScript("sse", 3))
		defer resp.Body.Close()
		events := readSSE(resp.Body)
		var stdout, stderr []byte
		var exit api.ExecResponse
		var pid int
		for exit.ExitCode == nil {
			ev := nextEvent(t, events)
			switch ev.typ {
			case api.EventStart:
				var s api.ProcessStartResponse
				if json.Unmarshal(ev.data, &s) != nil || s.Pid <= 0 {
					t.Fatalf("start event %s", ev.data)
				}
				pid = s.Pid
			case api.EventStdout:
				stdout = append(stdout, chunkBytes(t, ev.data)...)
				// A whole line opens its gate: the next comes only then.
				if n := bytes.Count(stdout, []byte("\n")); bytes.HasSuffix(stdout, []byte("\n")) && n <= 3 {
					d.openGate(id, "sse", n)
				}
			case api.EventStderr:
				stderr = append(stderr, chunkBytes(t, ev.data)...)
			case api.EventExit:
				if err := json.Unmarshal(ev.data, &exit); err != nil || exit.ExitCode == nil {
					t.Fatalf("exit event %s", ev.data)
				}
			default:
				t.Fatalf("unexpected event %q %s", ev.typ, ev.data)
			}
		}
		if pid == 0 || string(stdout) != "line1\nline2\nline3\n\xff" || string(stderr) != "warn\n" || *exit.ExitCode != 5 || exit.Stdout != "" {
			t.Fatalf("pid %d, stdout %q, stderr %q, exit %+v", pid, stdout, stderr, exit)
		}
		if ev := nextEvent(t, events); ev.typ != "result" {
			t.Fatalf("after exit: %q %s, want the result", ev.typ, ev.data)
		}
	})

	t.Run("CLI prints as written", func(t *testing.T) {
		hutch, _ := binaries(t)
		cmd := exec.Command(hutch, append([]string{"exec", id, "--"}, gatedScript("cli", 2)...)...)
		cmd.Env = append(cmd.Environ(), "HUTCH_URL="+d.url)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		for i := 1; i <= 2; i++ {
			line, err := r.ReadString('\n')
			if err != nil || line != fmt.Sprintf("line%d\n", i) {
				t.Fatalf("line %d through the pipe: %q, %v", i, line, err)
			}
			d.openGate(id, "cli", i)
		}
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		if string(rest) != "\xff" || cmd.ProcessState.ExitCode() != 5 || stderr.String() != "warn\n" {
			t.Fatalf("rest %q, exit %v (%v), stderr %q", rest, cmd.ProcessState.ExitCode(), err, stderr.String())
		}
	})

	t.Run("CLI: a background process attached, its log followed", func(t *testing.T) {
		out, errOut, code := d.cli("", "exec", "-d", "-i", "--tag", "reader", id, "--", "sh", "-c", `echo ready; read l; echo "got $l"; exit 6`)
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if code != 0 || err != nil {
			t.Fatalf("exec -d: code %d, stdout %q, stderr %q", code, out, errOut)
		}
		if out, _, code := d.cli("", "ps", id); code != 0 || !strings.Contains(out, strconv.Itoa(pid)+"*") || !strings.Contains(out, "reader") {
			t.Fatalf("ps: code %d\n%s", code, out)
		}
		// attach starts from what was written so far: "ready" is not
		// printed again, the answer to its stdin is, and its status is hutch's.
		if !testutil.Poll(time.Minute, func() bool {
			info, err := d.c.GetProcess(ctx, id, pid)
			return err == nil && info.StdoutBytes > 0
		}) {
			t.Fatal("the process never said it was ready")
		}
		out, errOut, code = d.cli("hello\n", "attach", id, strconv.Itoa(pid))
		if code != 6 || out != "got hello\n" {
			t.Fatalf("attach: code %d, stdout %q, stderr %q", code, out, errOut)
		}
		if out, _, code := d.cli("", "logs", "-f", id, strconv.Itoa(pid)); code != 0 || out != "ready\ngot hello\n" {
			t.Fatalf("logs -f of an exited process: code %d, stdout %q", code, out)
		}
		if _, errOut, code := d.cli("", "kill", id, strconv.Itoa(pid)); code != 1 || !strings.Contains(errOut, "S231") {
			t.Fatalf("kill of an exited process: code %d, stderr %q", code, errOut)
		}
	})

	t.Run("cancel by pid", func(t *testing.T) {
		pids := make(chan int, 1)
		res, err := d.c.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sleep", "1000"}},
			func(event string, data json.RawMessage) error {
				if event == api.EventStart {
					var s api.ProcessStartResponse
					_ = json.Unmarshal(data, &s)
					if _, err := d.c.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: s.Pid, Signal: "INT"}); err != nil {
						return err
					}
					pids <- s.Pid
				}
				return nil
			})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 130 {
			t.Fatalf("exec cancelled with SIGINT: %+v, %v; want exit 130", res, err)
		}
		if pid := <-pids; d.running(id, pid) {
			t.Fatalf("process %d still runs", pid)
		}
	})

	t.Run("a disconnect kills a foreground exec, not a background process", func(t *testing.T) {
		bg, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "1000"}, Tag: "survivor"})
		if err != nil {
			t.Fatal(err)
		}
		// A follower of the background process goes away.
		fctx, fcancel := context.WithCancel(ctx)
		followed := make(chan error, 1)
		go func() {
			_, err := d.c.FollowProcess(fctx, api.ProcessOutputRequest{SandboxID: id, Pid: bg.Pid}, nil)
			followed <- err
		}()
		// A plain exec and a streamed one whose clients go away once the
		// command runs (its pid file is written).
		for _, streamed := range []bool{false, true} {
			pidFile := fmt.Sprintf("/tmp/fg-%v", streamed)
			argv := []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 1000"}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				var err error
				if streamed {
					_, err = d.c.ExecStream(cctx, api.ExecRequest{SandboxID: id, Argv: argv}, nil)
				} else {
					_, err = d.c.Exec(cctx, api.ExecRequest{SandboxID: id, Argv: argv})
				}
				done <- err
			}()
			var pid int
			if !testutil.Poll(time.Minute, func() bool {
				r := d.exec(id, "cat", pidFile)
				pid, err = strconv.Atoi(strings.TrimSpace(r.Stdout))
				return err == nil
			}) {
				t.Fatalf("streamed %v: the command never started", streamed)
			}
			cancel()
			<-done
			if !testutil.Poll(time.Minute, func() bool { return !d.running(id, pid) }) {
				t.Fatalf("streamed %v: process %d outlived its client", streamed, pid)
			}
		}
		fcancel()
		<-followed
		info, err := d.c.GetProcess(ctx, id, bg.Pid)
		if err != nil || info.State != api.ProcessRunning || !d.running(id, bg.Pid) {
			t.Fatalf("background process after its follower left: %+v, %v", info, err)
		}
		if _, err := d.c.KillProcess(ctx, id, bg.Pid); err != nil {
			t.Fatal(err)
		}
		if info, err := d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: bg.Pid, TimeoutMs: 60_000}); err != nil || info.State != api.ProcessExited || info.Signal != "KILL" || *info.ExitCode != 137 {
			t.Fatalf("after kill: %+v, %v", info, err)
		}
	})

	t.Run("a background server is listed, followed, signalled and reaped", func(t *testing.T) {
		st, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web",
			Argv: []string{"python3", "-u", "-m", "http.server", "8000"}})
		if err != nil {
			t.Fatal(err)
		}
		list, err := d.c.ListProcesses(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var entry api.ProcessEntry
		for _, p := range list.Processes {
			if p.Pid == st.Pid {
				entry = p
			}
		}
		if !entry.Hutch || entry.Tag != "web" || !strings.Contains(entry.Command, "http.server") || entry.User != "root" || entry.RSSBytes == 0 {
			t.Fatalf("list entry %+v of %+v", entry, list.Processes)
		}
		type line struct{ event, text string }
		lines := make(chan line, 64)
		ended := make(chan api.ProcessInfo, 1)
		go func() {
			end, err := d.c.FollowProcess(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: st.Pid}, func(event string, data json.RawMessage) error {
				lines <- line{event, string(chunkBytes(t, data))}
				return nil
			})
			if err != nil {
				t.Errorf("follow: %v", err)
			}
			ended <- end
		}()
		waitFor := func(event, text string) {
			t.Helper()
			var seen []line
			for {
				select {
				case l := <-lines:
					seen = append(seen, l)
					if l.event == event && strings.Contains(l.text, text) {
						return
					}
				case <-time.After(60 * time.Second):
					t.Fatalf("no %s %q in %+v", event, text, seen)
				}
			}
		}
		waitFor(api.EventStdout, "Serving HTTP")
		d.setup(id, "python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/').read()")
		waitFor(api.EventStderr, "GET / HTTP")
		// The cursor: what was written from an offset on.
		info, err := d.c.GetProcess(ctx, id, st.Pid)
		if err != nil {
			t.Fatal(err)
		}
		out, err := d.c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: st.Pid, StderrOffset: info.StderrBytes - 10})
		if err != nil || len(out.Stderr.Data) != 10 || out.Stderr.Offset != info.StderrBytes-10 || !strings.HasPrefix(out.Stdout.Data, "Serving HTTP") {
			t.Fatalf("output from offsets: %+v, %v", out, err)
		}
		if _, err := d.c.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: st.Pid, Signal: "SIGTERM"}); err != nil {
			t.Fatal(err)
		}
		select {
		case end := <-ended:
			if end.State != api.ProcessExited || end.Signal != "TERM" || end.ExitCode == nil || *end.ExitCode != 143 || end.EndedAt == "" {
				t.Fatalf("end of the followed server: %+v", end)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the follow did not end with the process")
		}
		if d.running(id, st.Pid) {
			t.Fatal("the server is still listed after it exited")
		}
		if info, err := d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: st.Pid}); err != nil || info.State != api.ProcessExited {
			t.Fatalf("wait after the end: %+v, %v", info, err)
		}
	})

	t.Run("stdin written in pieces reaches cat", func(t *testing.T) {
		st, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"cat"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []api.ProcessStdinRequest{
			{Data: "hello "}, {Data: "wor"}, {Data: base64.StdEncoding.EncodeToString([]byte("\xffld\n")), Base64: true}, {Close: true},
		} {
			piece.SandboxID, piece.Pid = id, st.Pid
			if _, err := d.c.WriteStdin(ctx, piece); err != nil {
				t.Fatalf("stdin %+v: %v", piece, err)
			}
		}
		info, err := d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: st.Pid, TimeoutMs: 60_000})
		if err != nil || info.State != api.ProcessExited || *info.ExitCode != 0 {
			t.Fatalf("cat after its stdin closed: %+v, %v", info, err)
		}
		out, err := d.c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: st.Pid})
		if err != nil || !out.Stdout.Base64 {
			t.Fatalf("output: %+v, %v", out, err)
		}
		if got, _ := base64.StdEncoding.DecodeString(out.Stdout.Data); string(got) != "hello wor\xffld\n" {
			t.Fatalf("cat wrote %q", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		sleeper, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "1000"}})
		if err != nil {
			t.Fatal(err)
		}
		exited, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.WaitProcess(ctx, api.ProcessWaitRequest{SandboxID: id, Pid: exited.Pid, TimeoutMs: 60_000}); err != nil {
			t.Fatal(err)
		}
		const nobody = 99999
		tests := []struct {
			name string
			code string
			call func() error
		}{
			{"get an unknown pid", "S230", func() error { _, err := d.c.GetProcess(ctx, id, nobody); return err }},
			{"kill an unknown pid", "S230", func() error { _, err := d.c.KillProcess(ctx, id, nobody); return err }},
			{"output of an unknown pid", "S230", func() error {
				_, err := d.c.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: id, Pid: nobody})
				return err
			}},
			{"signal an exited process", "S231", func() error {
				_, err := d.c.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: exited.Pid})
				return err
			}},
			{"stdin without stdin", "S232", func() error {
				_, err := d.c.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: id, Pid: sleeper.Pid, Data: "x"})
				return err
			}},
			{"resize without a terminal", "S233", func() error {
				_, err := d.c.ResizeProcess(ctx, api.ProcessResizeRequest{SandboxID: id, Pid: sleeper.Pid, PtySize: api.PtySize{Cols: 10, Rows: 10}})
				return err
			}},
			{"an unknown signal", "S001", func() error {
				_, err := d.c.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: id, Pid: sleeper.Pid, Signal: "SIGNOPE"})
				return err
			}},
			{"a command that does not exist", "S001", func() error {
				_, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"/no/such/cmd"}})
				return err
			}},
			{"a fifth process", "S234", func() error {
				for range 3 { // the sleeper is the first of 4
					if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "1000"}, Tag: "filler"}); err != nil {
						return err
					}
				}
				_, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "1000"}})
				return err
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
		}
		// Nothing else changed: the sleeper runs on.
		if info, err := d.c.GetProcess(ctx, id, sleeper.Pid); err != nil || info.State != api.ProcessRunning {
			t.Fatalf("the sleeper after the errors: %+v, %v", info, err)
		}
		list, err := d.c.ListProcesses(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Processes {
			if p.Hutch {
				if _, err := d.c.KillProcess(ctx, id, p.Pid); err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("terminal", func(t *testing.T) {
		term, err := d.c.Terminal(ctx, id, client.TerminalOptions{Cols: 80, Rows: 24, Env: []string{"PS1=$ "}, Cmd: []string{"sh"}})
		if err != nil {
			t.Fatal(err)
		}
		defer term.Close()
		var seen bytes.Buffer
		expect := func(want string) {
			t.Helper()
			buf := make([]byte, 4096)
			for !strings.Contains(seen.String(), want) {
				n, err := term.Read(buf)
				if err != nil {
					t.Fatalf("reading for %q: %v; seen %q", want, err, seen.String())
				}
				seen.Write(buf[:n])
			}
			seen.Reset()
		}
		if _, err := term.Write([]byte("stty size; tty\n")); err != nil {
			t.Fatal(err)
		}
		expect("24 80")
		expect("/dev/pts/")
		if err := term.Resize(100, 30); err != nil {
			t.Fatal(err)
		}
		if _, err := term.Write([]byte("stty size\n")); err != nil {
			t.Fatal(err)
		}
		expect("30 100")
		if _, err := term.Write([]byte("exit 3\n")); err != nil {
			t.Fatal(err)
		}
		if code, err := term.Wait(); err != nil || code != 3 {
			t.Fatalf("exit status %d, %v; want 3", code, err)
		}

		// A client that goes away takes its terminal's process along.
		gone, err := d.c.Terminal(ctx, id, client.TerminalOptions{Cmd: []string{"sleep", "1000"}})
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if !testutil.Poll(time.Minute, func() bool {
			list, err := d.c.ListProcesses(ctx, id)
			for _, p := range list.Processes {
				if p.Tag == "terminal" && strings.HasPrefix(p.Command, "sleep") {
					pid = p.Pid
				}
			}
			return err == nil && pid != 0
		}) {
			t.Fatal("the terminal's process is not listed")
		}
		gone.Close()
		if !testutil.Poll(time.Minute, func() bool { return !d.running(id, pid) }) {
			t.Fatalf("terminal process %d outlived its client", pid)
		}
	})

	t.Run("1 GiB streams through with bounded daemon memory", func(t *testing.T) {
		const size = 1 << 30
		const limitKiB = streamMemoryKiB
		base := d.statusKiB("VmHWM")
		var got int64
		// Written in 1 MiB pieces: gVisor makes many small writes slow.
		res, err := d.c.ExecStream(ctx, api.ExecRequest{SandboxID: id, TimeoutMs: setupTimeoutMs, Argv: []string{"python3", "-c",
			fmt.Sprintf("import sys\nb = b'0123456789abcdef' * 65536\nfor _ in range(%d): sys.stdout.buffer.write(b)", size>>20)}},
			func(event string, data json.RawMessage) error {
				if event == api.EventStdout {
					var c api.OutputChunk
					if err := json.Unmarshal(data, &c); err != nil {
						return err
					}
					got += int64(len(c.Data))
				}
				return nil
			})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || got != size {
			t.Fatalf("streamed %d bytes, result %+v, %v", got, res, err)
		}
		growth := d.statusKiB("VmHWM") - base
		t.Logf("1 GiB streamed in %d ms; the daemon's peak RSS grew by %d KiB", res.DurationMs, growth)
		if growth > limitKiB {
			t.Fatalf("the daemon's peak RSS grew by %d KiB streaming 1 GiB", growth)
		}
	})
}

// TestShellThroughTmux drives `hutch shell` as a person would, in a tmux
// pane: the prompt, a command's output, the size after a resize, the exit
// status.
// TestExecLeavesAServerBehind: a server an exec started in the background
// (its stdout and stderr the exec's) keeps serving after the exec
// returned, though it logs every request to the exec's stderr.
func TestExecLeavesAServerBehind(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	if out, errOut, code := d.cli("", "exec", id, "--", "sh", "-c", "python3 -m http.server 8001 &"); code != 0 {
		t.Fatalf("hutch exec: %d %q %q", code, out, errOut)
	}
	// Once it listens, 100 requests, each logged by the server.
	client := `import socket, time, urllib.request
deadline = time.time() + 120
while True:
    try:
        socket.create_connection(("127.0.0.1", 8001), timeout=5).close()
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
failed = 0
for i in range(100):
    try:
        urllib.request.urlopen("http://127.0.0.1:8001/", timeout=30).read()
    except OSError as e:
        failed += 1
        err = e
print("failed", failed, err if failed else "")
`
	r := d.execReq(api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", client}, TimeoutMs: setupTimeoutMs})
	if !r.Success || strings.TrimSpace(r.Stdout) != "failed 0" {
		t.Fatalf("requests to the server left behind: success %v, stdout %q, stderr %q", r.Success, r.Stdout, r.Stderr)
	}
}

func TestShellThroughTmux(t *testing.T) {
	tmux := testutil.RequiresBinary(t, "tmux")
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	hutch, _ := binaries(t)
	status := t.TempDir() + "/status"
	run := tmuxSession(t, tmux, "t", 100, 30,
		fmt.Sprintf("HUTCH_URL=%s %s shell %s; echo $? > %s; sleep 600", d.url, hutch, id, status))
	screen := func(want string) {
		t.Helper()
		var pane string
		if !testutil.Poll(time.Minute, func() bool {
			pane = run("capture-pane", "-p", "-t", "t")
			return strings.Contains(pane, want)
		}) {
			t.Fatalf("no %q on the screen:\n%s", want, pane)
		}
	}
	screen("root@hutch-")
	run("send-keys", "-t", "t", "echo sum=$((6*7))", "Enter")
	screen("sum=42")
	run("send-keys", "-t", "t", "stty size", "Enter")
	screen("30 100")
	run("resize-window", "-t", "t", "-x", "90", "-y", "20")
	run("send-keys", "-t", "t", "clear; stty size", "Enter")
	screen("20 90")
	run("send-keys", "-t", "t", "exit 3", "Enter")
	var code string
	if !testutil.Poll(time.Minute, func() bool {
		b, err := exec.Command("cat", status).Output()
		code = strings.TrimSpace(string(b))
		return err == nil && code != ""
	}) || code != "3" {
		t.Fatalf("hutch shell exited %q, want 3", code)
	}
}
