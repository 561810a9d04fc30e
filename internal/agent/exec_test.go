package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// helperEnv makes the test binary act as hutch-agent: see TestMain.
const helperEnv = "HUTCH_AGENT_TEST_HELPER"

// TestMain lets the tests re-execute this binary as an agent that reaps
// orphans (a subreaper here, PID 1 in a sandbox), serving on its stdio the
// way cmd/hutch-agent does.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serveStdio())
	}
	os.Exit(m.Run())
}

func serveStdio() int {
	conn, err := agent.Stdio()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := agent.New(agent.Options{Version: "test", ReapOrphans: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Serve(context.Background(), conn); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// reaperAgent starts this test binary as an orphan-reaping agent and
// returns a client connected to it over the subprocess's stdin and stdout,
// and the subprocess's pid.
func reaperAgent(t *testing.T) (*agentclient.Client, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := agentclient.Dial(&agenttest.Conn{R: r, W: w}, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close() // stdin EOF: the agent exits
		if err := cmd.Wait(); err != nil {
			t.Errorf("agent subprocess: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c, cmd.Process.Pid
}

// agents runs f against both kinds of agent: in-process, waiting for its
// own children only, and a subprocess reaping every orphan as hutch-agent does.
func agents(t *testing.T, f func(t *testing.T, c *agentclient.Client)) {
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		f(t, agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client)
	})
	t.Run("reaper", func(t *testing.T) {
		t.Parallel()
		c, _ := reaperAgent(t)
		f(t, c)
	})
}

// writeFile creates a file with the given content and mode.
func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bin, "hello"), "#!/bin/sh\necho hello from PATH\n", 0o755)
	writeFile(t, filepath.Join(bin, "noexec"), "#!/bin/sh\necho no\n", 0o644)
	noexec := filepath.Join(bin, "noexec")
	badInterp := writeFile(t, filepath.Join(dir, "badinterp"), "#!/nonexistent/sh\n", 0o755)
	bigStdin := bytes.Repeat([]byte("x"), 3<<20)

	type want struct {
		exitCode        int32
		stdout, stderr  string
		stdoutTrunc     bool
		stdoutLen       int // checked instead of stdout when > 0
		code            codes.Code
		errTextContains string
	}
	cases := []struct {
		name string
		req  *agentv1.ExecRequest
		want want
	}{
		{"true", &agentv1.ExecRequest{Argv: []string{"true"}}, want{}},
		{"exit code", &agentv1.ExecRequest{Argv: []string{"sh", "-c", "exit 3"}}, want{exitCode: 3}},
		{"stdout and stderr apart",
			&agentv1.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 1"}},
			want{exitCode: 1, stdout: "out\n", stderr: "err\n"}},
		{"stdin", &agentv1.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("hello\n")}, want{stdout: "hello\n"}},
		{"no stdin is EOF", &agentv1.ExecRequest{Argv: []string{"cat"}}, want{}},
		{"large stdin", &agentv1.ExecRequest{Argv: []string{"wc", "-c"}, Stdin: bigStdin},
			want{stdout: strconv.Itoa(len(bigStdin)) + "\n"}},
		{"stdin not read", &agentv1.ExecRequest{Argv: []string{"true"}, Stdin: bigStdin}, want{}},
		{"env is exact", &agentv1.ExecRequest{Argv: []string{"/usr/bin/env"}, Env: []string{"A=1", "B=two words"}},
			want{stdout: "A=1\nB=two words\n"}},
		{"empty env", &agentv1.ExecRequest{Argv: []string{"/usr/bin/env"}}, want{}},
		{"PATH from env", &agentv1.ExecRequest{Argv: []string{"hello"}, Env: []string{"PATH=/nowhere:" + bin}},
			want{stdout: "hello from PATH\n"}},
		{"default PATH", &agentv1.ExecRequest{Argv: []string{"env"}}, want{}},
		{"workdir", &agentv1.ExecRequest{Argv: []string{"/bin/pwd"}, Workdir: dir}, want{stdout: dir + "\n"}},
		{"default workdir", &agentv1.ExecRequest{Argv: []string{"/bin/pwd"}}, want{stdout: "/\n"}},
		{"relative path from workdir", &agentv1.ExecRequest{Argv: []string{"./bin/hello"}, Workdir: dir},
			want{stdout: "hello from PATH\n"}},
		{"not found", &agentv1.ExecRequest{Argv: []string{"no-such-command"}},
			want{exitCode: 127, stderr: "exec: no-such-command: not found\n"}},
		{"path not found", &agentv1.ExecRequest{Argv: []string{"/no/such/file"}},
			want{exitCode: 127, stderr: "exec: /no/such/file: not found\n"}},
		{"bad interpreter", &agentv1.ExecRequest{Argv: []string{badInterp}},
			want{exitCode: 127, stderr: "exec: " + badInterp + ": no such file or directory\n"}},
		{"not executable", &agentv1.ExecRequest{Argv: []string{noexec}},
			want{exitCode: 126, stderr: "exec: " + noexec + ": permission denied\n"}},
		{"not executable on PATH", &agentv1.ExecRequest{Argv: []string{"noexec"}, Env: []string{"PATH=" + bin}},
			want{exitCode: 126, stderr: "exec: noexec: permission denied\n"}},
		{"directory", &agentv1.ExecRequest{Argv: []string{bin}},
			want{exitCode: 126, stderr: "exec: " + bin + ": is a directory\n"}},
		{"killed by SIGKILL", &agentv1.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $$"}}, want{exitCode: 137}},
		{"killed by SIGTERM", &agentv1.ExecRequest{Argv: []string{"sh", "-c", "kill -TERM $$"}}, want{exitCode: 143}},
		{"truncated", &agentv1.ExecRequest{
			Argv:           []string{"sh", "-c", "head -c 100000 /dev/zero; echo done >&2"},
			MaxOutputBytes: 1000,
		}, want{stdoutLen: 1000, stdoutTrunc: true, stderr: "done\n"}},
		{"empty argv", &agentv1.ExecRequest{}, want{code: codes.InvalidArgument, errTextContains: "argv is empty"}},
		{"missing workdir", &agentv1.ExecRequest{Argv: []string{"true"}, Workdir: "/no/such/dir"},
			want{code: codes.InvalidArgument, errTextContains: "workdir /no/such/dir: no such file or directory"}},
		{"relative workdir", &agentv1.ExecRequest{Argv: []string{"true"}, Workdir: "tmp"},
			want{code: codes.InvalidArgument, errTextContains: "not an absolute path"}},
		{"NUL in argv", &agentv1.ExecRequest{Argv: []string{"echo", "a\x00b"}},
			want{code: codes.InvalidArgument, errTextContains: "NUL"}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name string
			req  *agentv1.ExecRequest
			want want
		}{"set user", &agentv1.ExecRequest{
			Argv: []string{"sh", "-c", "echo $(id -u):$(id -g):$(id -G)"}, SetUser: true, Uid: 65534, Gid: 65534, Groups: []uint32{65534, 100},
		}, want{stdout: "65534:65534:65534 100\n"}})
	}

	agents(t, func(t *testing.T, c *agentclient.Client) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, err := c.Exec(context.Background(), tc.req)
				if tc.want.code != codes.OK {
					if status.Code(err) != tc.want.code || !strings.Contains(err.Error(), tc.want.errTextContains) {
						t.Fatalf("got error %v, want code %v containing %q", err, tc.want.code, tc.want.errTextContains)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !resp.Exited || resp.TimedOut || resp.ExitCode != tc.want.exitCode {
					t.Errorf("exited=%v timed_out=%v exit_code=%d, want exited exit_code=%d (stderr %q)",
						resp.Exited, resp.TimedOut, resp.ExitCode, tc.want.exitCode, resp.Stderr)
				}
				if tc.want.stdoutLen > 0 {
					if len(resp.Stdout) != tc.want.stdoutLen {
						t.Errorf("stdout is %d bytes, want %d", len(resp.Stdout), tc.want.stdoutLen)
					}
				} else if string(resp.Stdout) != tc.want.stdout {
					t.Errorf("stdout = %q, want %q", resp.Stdout, tc.want.stdout)
				}
				if string(resp.Stderr) != tc.want.stderr {
					t.Errorf("stderr = %q, want %q", resp.Stderr, tc.want.stderr)
				}
				if resp.StdoutTruncated != tc.want.stdoutTrunc || resp.StderrTruncated {
					t.Errorf("truncated = %v/%v, want %v/false", resp.StdoutTruncated, resp.StderrTruncated, tc.want.stdoutTrunc)
				}
			})
		}
	})
}

func TestExecTimings(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"sleep", "0.1"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.DurationUs < 100_000 || resp.DurationUs > 5_000_000 {
			t.Errorf("duration_us = %d, want about 100000", resp.DurationUs)
		}
		if resp.SpawnUs <= 0 || resp.SpawnUs >= resp.DurationUs {
			t.Errorf("spawn_us = %d, want in (0, %d)", resp.SpawnUs, resp.DurationUs)
		}
	})
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	cases := []struct {
		name   string
		script string // %s is the sleep's marker
	}{
		// The sleep is a child of the shell: only a group kill reaches it.
		{"child", "echo partial; sleep %s"},
		// A grandchild, in a subshell.
		{"grandchild", "echo partial; (sleep %s; echo never)"},
	}
	agents(t, func(t *testing.T, c *agentclient.Client) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				marker := uniqueSleep()
				start := time.Now()
				resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{
					Argv:      []string{"sh", "-c", fmt.Sprintf(tc.script, marker)},
					TimeoutMs: 1000,
				})
				elapsed := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				// The sleeps last 300 s and more: a bound far under that, which no
				// busy machine comes near, shows the exec did not wait for them.
				if elapsed > time.Minute {
					t.Errorf("exec took %v, want about 1s", elapsed)
				}
				if !resp.TimedOut || resp.Exited || string(resp.Stdout) != "partial\n" {
					t.Errorf("timed_out=%v exited=%v stdout=%q, want true false \"partial\\n\"", resp.TimedOut, resp.Exited, resp.Stdout)
				}
				waitGone(t, marker)
			})
		}
	})
}

func TestExecCancelKillsGroup(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		marker := uniqueSleep()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "sleep " + marker}})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		waitGone(t, marker)
	})
}

func TestExecBackgroundChildDoesNotHang(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		// The child sleeps for minutes, longer than the test may run:
		// the exec returning at all, with the child still alive, shows
		// it did not wait for it.
		marker := uniqueSleep()
		t.Cleanup(func() { killMarked(marker) })
		resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{
			Argv: []string{"sh", "-c", "sleep " + marker + " & echo started"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(marked(marker)) == 0 {
			t.Error("the background child is gone: the exec waited for it")
		}
		if !resp.Exited || resp.ExitCode != 0 || string(resp.Stdout) != "started\n" {
			t.Errorf("exited=%v exit_code=%d stdout=%q", resp.Exited, resp.ExitCode, resp.Stdout)
		}
	})
}

// TestExecLeftBehindKeepsWriting: a process an exec left behind with its
// stdout and stderr keeps writing them after the exec returned (its
// output is read and dropped), instead of meeting a closed pipe.
func TestExecLeftBehindKeepsWriting(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		dir := t.TempDir()
		gate, result := filepath.Join(dir, "go"), filepath.Join(dir, "result")
		// The child waits until the exec has returned, then writes 1 MiB
		// to each stream (SIGPIPE or a failed write ends it early).
		script := `(while [ ! -e "$1" ]; do sleep 0.01; done
			i=0; while [ $i -lt 256 ]; do
				{ head -c 4096 /dev/zero && head -c 4096 /dev/zero >&2; } || { echo failed >"$2"; exit 3; }
				i=$((i+1))
			done; echo done >"$2") & echo started`
		resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"sh", "-c", script, "sh", gate, result}})
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Exited || resp.ExitCode != 0 || string(resp.Stdout) != "started\n" {
			t.Fatalf("exited=%v exit_code=%d stdout=%q", resp.Exited, resp.ExitCode, resp.Stdout)
		}
		writeFile(t, gate, "", 0o644)
		var got []byte
		testutil.Eventually(t, time.Minute, func() bool {
			got, _ = os.ReadFile(result)
			return len(got) > 0
		}, "the child left behind finishes writing")
		if string(got) != "done\n" {
			t.Fatalf("the child left behind could not write (%q): its output was cut off", got)
		}
	})
}

// TestExecConcurrent: 20 execs run at once. Each one marks that it has
// started, then waits until all 20 have, so they can only finish if the
// agent runs them concurrently (one that waits too long gives up with
// exit code 99 rather than hang the test).
func TestExecConcurrent(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		const n = 20
		barrier := t.TempDir()
		script := `touch "$1/$0"
			i=0; while [ "$(ls "$1" | wc -l)" -lt "$2" ]; do
				i=$((i+1)); [ $i -lt 20000 ] || { echo "not all $2 started" >&2; exit 99; }
				sleep 0.01
			done
			echo $0; exit $(($0 % 7))`
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{
					Argv: []string{"sh", "-c", script, strconv.Itoa(i), barrier, strconv.Itoa(n)},
				})
				switch {
				case err != nil:
					errs <- err
				case string(resp.Stdout) != fmt.Sprintf("%d\n", i) || resp.ExitCode != int32(i%7):
					errs <- fmt.Errorf("exec %d: stdout %q stderr %q exit_code %d", i, resp.Stdout, resp.Stderr, resp.ExitCode)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestReaperCollectsOrphans runs the agent as hutch-agent does, reaping every
// child, and checks that orphaned grandchildren do not stay zombies while
// every exec still gets its own exit status.
func TestReaperCollectsOrphans(t *testing.T) {
	c, agentPid := reaperAgent(t)

	// One orphan, watched: it must be re-parented to the agent, then reaped.
	resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{
		Argv: []string{"sh", "-c", "sleep 0.3 </dev/null >/dev/null 2>&1 & echo $!"},
	})
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(resp.Stdout)))
	if err != nil {
		t.Fatalf("orphan pid %q: %v", resp.Stdout, err)
	}
	if p, ok := readProc(orphan); !ok || p.ppid != agentPid {
		t.Fatalf("orphan %d: %+v, want it alive with parent %d", orphan, p, agentPid)
	}

	// Meanwhile many execs leave orphans behind; statuses must not mix up.
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{
				Argv: []string{"sh", "-c", "sleep 0.05 </dev/null >/dev/null 2>&1 & exit $0", strconv.Itoa(i)},
			})
			if err != nil {
				t.Error(err)
			} else if resp.ExitCode != int32(i) {
				t.Errorf("exec %d: exit_code %d", i, resp.ExitCode)
			}
		})
	}
	wg.Wait()

	var alive bool
	var zombies []int
	if !testutil.Poll(30*time.Second, func() bool {
		_, alive = readProc(orphan)
		zombies = zombiesOf(agentPid)
		return !alive && len(zombies) == 0
	}) {
		t.Fatalf("orphan %d still present (alive=%v); zombie children of the agent: %v", orphan, alive, zombies)
	}

	resp, err = c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"sh", "-c", "exit 9"}})
	if err != nil || resp.ExitCode != 9 {
		t.Fatalf("exec after reaping: %v %v", resp, err)
	}
}

func TestInfo(t *testing.T) {
	agents(t, func(t *testing.T, c *agentclient.Client) {
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.Pid <= 0 || info.UptimeNs <= 0 || info.Version == "" {
			t.Errorf("info = %v", info)
		}
	})
}

func TestLimitsAgree(t *testing.T) {
	if agent.MaxRequestBytes != agentclient.MaxRequestBytes {
		t.Errorf("agent accepts %d-byte requests, client sends up to %d", agent.MaxRequestBytes, agentclient.MaxRequestBytes)
	}
	if agent.DefaultMaxOutputBytes != agentclient.DefaultMaxOutputBytes {
		t.Errorf("default output caps differ: agent %d, client %d", agent.DefaultMaxOutputBytes, agentclient.DefaultMaxOutputBytes)
	}
}

// proc is what the tests read of /proc/PID/stat and cmdline.
type proc struct {
	pid, ppid int
	state     byte
	cmdline   string
}

// readProc reads a process; ok is false when it no longer exists or is a
// zombie.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmdline = string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
	return p, p.state != 'Z'
}

// allProcs lists every process on the host.
func allProcs() []proc {
	ents, _ := os.ReadDir("/proc")
	var ps []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && len(p) > 0 {
			q, _ := readProc(pid)
			if q.pid != 0 {
				ps = append(ps, q)
			}
		}
	}
	return ps
}

func zombiesOf(ppid int) []int {
	var z []int
	for _, p := range allProcs() {
		if p.ppid == ppid && p.state == 'Z' {
			z = append(z, p.pid)
		}
	}
	return z
}

var sleepSeq struct {
	sync.Mutex
	n int
}

// uniqueSleep is a long sleep argument that marks the process running it.
func uniqueSleep() string {
	sleepSeq.Lock()
	defer sleepSeq.Unlock()
	sleepSeq.n++
	return fmt.Sprintf("%d.%d%d", 300+sleepSeq.n, os.Getpid()%1000, time.Now().UnixNano()%1000)
}

// marked lists live processes whose command line is a sleep of marker.
func marked(marker string) []proc {
	var ps []proc
	for _, p := range allProcs() {
		if p.state != 'Z' && p.cmdline == "sleep "+marker+" " {
			ps = append(ps, p)
		}
	}
	return ps
}

// waitGone fails t unless every sleep of marker is dead within hang.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	if !testutil.Poll(hang, func() bool { return len(marked(marker)) == 0 }) {
		t.Errorf("sleep %s still running: %v", marker, marked(marker))
		killMarked(marker)
	}
}

func killMarked(marker string) {
	for _, p := range marked(marker) {
		if pr, err := os.FindProcess(p.pid); err == nil {
			_ = pr.Kill()
		}
	}
}
