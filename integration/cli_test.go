package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestCLIPaperCuts drives the CLI as a new user would, on one daemon: the
// backlog of `hutch logs -f`, a shell fed by a pipe, names and id
// prefixes, sizes and durations in flags, bounded downloads.
func TestCLIPaperCuts(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", Name: "papercut"})
	hutch, _ := binaries(t)
	ctx := context.Background()

	t.Run("logs -f prints the backlog oldest process first", func(t *testing.T) {
		const n = 8
		for i := 1; i <= n; i++ {
			// Each writes its line, then waits: the line is backlog when
			// logs -f starts.
			if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: fmt.Sprintf("bg%d", i),
				Argv: []string{"sh", "-c", fmt.Sprintf("echo line%d; exec sleep 600", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if !testutil.Poll(time.Minute, func() bool {
			out, _, code := d.cli("", "logs", "--tag", fmt.Sprintf("bg%d", n), id)
			return code == 0 && strings.Contains(out, fmt.Sprintf("line%d", n))
		}) {
			t.Fatal("the last process never wrote its line")
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(lctx, hutch, "logs", "-f", id)
		cmd.Env = append(cmd.Environ(), "HUTCH_URL="+d.url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		var got []string
		for sc := bufio.NewScanner(out); len(got) < n && sc.Scan(); {
			if _, line, ok := strings.Cut(sc.Text(), " | "); ok && strings.HasPrefix(line, "line") {
				got = append(got, line)
			}
		}
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("line%d", i+1)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("logs -f printed the backlog as %q, want %q", got, want)
		}
	})

	// cliWithin runs the CLI like d.cli, failing the test when it has not
	// ended within a generous bound (a hang).
	cliWithin := func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, hutch, args...)
		cmd.Env = append(cmd.Environ(), "HUTCH_URL="+d.url)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if cctx.Err() != nil {
			t.Fatalf("hutch %q did not end: stdout %q, stderr %q", args, out.String(), errb.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	t.Run("shell and exec -it end with a piped stdin", func(t *testing.T) {
		// No exit in the input: its end ends the shell, with the status
		// of its last command.
		out, errOut, code := cliWithin(t, "echo hi from the $0\n(exit 3)\n", "shell", id)
		if code != 3 || !strings.Contains(out, "hi from the ") {
			t.Errorf("echo ... | hutch shell: code %d, stdout %q, stderr %q; want 3 and the echo", code, out, errOut)
		}
		out, errOut, code = cliWithin(t, "one\ntwo", "exec", "-it", id, "--", "sh", "-c", "cat; echo end")
		if code != 0 || out != "one\ntwoend\n" {
			t.Errorf("... | hutch exec -it: code %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("names and id prefixes", func(t *testing.T) {
		for _, ref := range []string{"papercut", id[:6]} {
			out, errOut, code := cliWithin(t, "", "exec", ref, "--", "cat", "/etc/hostname")
			if code != 0 || out == "" {
				t.Errorf("exec %s: code %d, stdout %q, stderr %q", ref, code, out, errOut)
			}
		}
		// Two live sandboxes of one name: the name is ambiguous, and the
		// error names both.
		other := d.create(api.CreateRequest{Image: "python", Name: "papercut"})
		if _, errOut, code := cliWithin(t, "", "ps", "papercut"); code != 1 || !strings.Contains(errOut, id) || !strings.Contains(errOut, other) {
			t.Errorf("ps papercut, a name of two sandboxes: code %d, stderr %q", code, errOut)
		}
		_, errOut, code := cliWithin(t, "", "exec", "nosuch", "--", "true")
		if code != 125 || !strings.Contains(errOut, `no sandbox has the name or id prefix "nosuch"`) {
			t.Errorf("exec nosuch: code %d, stderr %q", code, errOut)
		}
		const unknown = "00000000-0000-4000-8000-000000000000"
		out, errOut, code := cliWithin(t, "", "stop", "--wait", other[:13], unknown)
		if code != 1 || out != other+"\n" || !strings.Contains(errOut, "S002") {
			t.Errorf("stop %s %s: code %d, stdout %q, stderr %q; want the first stopped and S002 for the other", other[:13], unknown, code, out, errOut)
		}
		// Of a live and a stopped sandbox of one name, the live one.
		if out, errOut, code := cliWithin(t, "", "exec", "papercut", "--", "true"); code != 0 {
			t.Errorf("exec papercut once the other is stopped: code %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("sizes and durations in create's flags; the host's capacity", func(t *testing.T) {
		out, errOut, code := cliWithin(t, "", "create", "python", "--memory", "1g", "--idle-timeout", "5m")
		if code != 0 {
			t.Fatalf("create --memory 1g --idle-timeout 5m: code %d, stderr %q", code, errOut)
		}
		sb := strings.TrimSpace(out)
		d.ids = append(d.ids, sb)
		info, err := d.c.Get(ctx, sb)
		if err != nil || info.MemoryMB != 1024 || info.IdleTimeoutSecs != 300 {
			t.Errorf("the sandbox of create --memory 1g --idle-timeout 5m: %+v, %v", info, err)
		}
		d.cli("", "stop", sb)
		cpus := strconv.Itoa(goruntime.NumCPU() + 1)
		_, errOut, code = cliWithin(t, "", "create", "python", "--cpus", cpus)
		if code != 1 || !strings.Contains(errOut, "S400") || !strings.Contains(errOut, fmt.Sprintf("the %d CPUs this host has", goruntime.NumCPU())) {
			t.Errorf("create --cpus %s: code %d, stderr %q; want S400 with the host's CPUs", cpus, code, errOut)
		}
		_, errOut, code = cliWithin(t, "", "create", "python", "--memory", "1t")
		if code != 1 || !strings.Contains(errOut, "S400") || !strings.Contains(errOut, "MiB of memory this host has") {
			t.Errorf("create --memory 1t: code %d, stderr %q; want S400 with the host's memory", code, errOut)
		}
	})

	t.Run("hints name commands", func(t *testing.T) {
		_, errOut, code := cliWithin(t, "", "logs", id, "99999")
		if code != 1 || !strings.Contains(errOut, "hint: 'hutch ps'") || strings.Contains(errOut, "sandbox::") {
			t.Errorf("logs of no process: code %d, stderr %q; want a hint naming hutch ps", code, errOut)
		}
	})

	t.Run("downloads are bounded", func(t *testing.T) {
		// Sparse: 8 MiB that take no room in the sandbox.
		d.setup(id, "sh", "-c", "mkdir -p /tmp/dl && truncate -s 8m /tmp/dl/sparse")
		local := t.TempDir()
		for _, tt := range []struct{ remote, local string }{
			{"/tmp/dl/sparse", filepath.Join(local, "file")},
			{"/tmp/dl", filepath.Join(local, "dir")},
		} {
			_, errOut, code := cliWithin(t, "", "download", "--max-size", "1m", id, tt.remote, tt.local)
			if code != 1 || !strings.Contains(errOut, tt.remote+" is larger than --max-size 1m") {
				t.Errorf("download --max-size 1m of %s: code %d, stderr %q", tt.remote, code, errOut)
			}
			var written int64
			filepath.Walk(tt.local, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					written += fi.Size()
				}
				return nil
			})
			if written > 1<<20 {
				t.Errorf("download --max-size 1m of %s wrote %d bytes", tt.remote, written)
			}
			if _, errOut, code := cliWithin(t, "", "download", "--max-size", "8m", id, tt.remote, tt.local); code != 0 {
				t.Errorf("download --max-size 8m of %s: code %d, stderr %q", tt.remote, code, errOut)
			}
		}
		out, errOut, code := cliWithin(t, "", "fs", "read", "--max-size", "1m", id, "/tmp/dl/sparse")
		if code != 1 || len(out) > 1<<20 || !strings.Contains(errOut, "/tmp/dl/sparse is larger than --max-size 1m") {
			t.Errorf("fs read --max-size 1m: code %d, %d bytes out, stderr %q", code, len(out), errOut)
		}
	})

	t.Run("repl on a terminal: line editing, Ctrl-C interrupts the cell, Ctrl-D ends it", func(t *testing.T) {
		tmux := testutil.RequiresBinary(t, "tmux")
		status := t.TempDir() + "/status"
		run := tmuxSession(t, tmux, "r", 120, 40,
			fmt.Sprintf("HUTCH_URL=%s %s repl %s; echo repl-exit=$? > %s; sleep 600", d.url, hutch, id, status))
		var pane string
		// screen waits for a line of the screen that ends with want (the
		// end of an output line, not of the input that echoes it).
		screen := func(want string) {
			t.Helper()
			re := regexp.MustCompile(`(?m)` + regexp.QuoteMeta(want) + `$`)
			if !testutil.Poll(2*time.Minute, func() bool {
				pane = run("capture-pane", "-p", "-t", "r", "-S", "-100")
				return re.MatchString(pane)
			}) {
				t.Fatalf("no line ending with %q on the screen:\n%s", want, pane)
			}
		}
		keys := func(k ...string) { run(append([]string{"send-keys", "-t", "r"}, k...)...) }
		screen(">>>") // capture-pane drops trailing blanks
		keys("x = 41", "Enter", "print(x + 1)", "Enter")
		screen("42")
		// Arrows move the cursor: 1 and 3 typed around the 2.
		keys("print(2)", "Left", "Left", "1", "Right", "3", "Enter")
		screen("123")
		// Ctrl-C interrupts a running cell; the repl and the state stay.
		keys("import time; print('sleep' + 'ing', flush=True); time.sleep(600)", "Enter")
		screen("sleeping")
		keys("C-c")
		screen("KeyboardInterrupt")
		keys("print(x * 1000)", "Enter")
		screen("41000")
		if strings.Contains(pane, "repl-exit") {
			t.Fatalf("the repl ended:\n%s", pane)
		}
		// At the prompt Ctrl-C drops the line; Ctrl-D ends the repl, exit 0.
		keys("this is not python", "C-c", "print('after' + ' drop')", "Enter")
		screen("after drop")
		if strings.Contains(pane, "SyntaxError") {
			t.Errorf("the dropped line ran:\n%s", pane)
		}
		keys("C-d")
		var code string
		if !testutil.Poll(time.Minute, func() bool {
			b, err := os.ReadFile(status)
			code = strings.TrimSpace(string(b))
			return err == nil && code != ""
		}) || code != "repl-exit=0" {
			t.Fatalf("after Ctrl-D: %q; screen:\n%s", code, run("capture-pane", "-p", "-t", "r"))
		}
	})
}
