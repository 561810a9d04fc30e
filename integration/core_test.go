package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestRunPrintsThroughCLI(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	out, errOut, code := d.cli("", "run", "python", "--", "python3", "-c", "print(2+2)")
	if code != 0 || out != "4\n" {
		t.Fatalf("hutch run: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The sandbox of `run` is stopped afterwards.
	list, err := d.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list.Sandboxes {
		if !sb.Stopped {
			t.Errorf("sandbox %s still live after hutch run", sb.SandboxID)
		}
	}
}

func TestCLICreateExecStop(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	out, errOut, code := d.cli("", "create", "python", "--name", "cli", "-e", "GREETING=hi", "-e", "IGNORED")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 36 {
		t.Fatalf("hutch create: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	d.ids = append(d.ids, id)
	out, _, code = d.cli("", "exec", id, "--", "sh", "-c", "echo $GREETING; exit 3")
	if code != 3 || out != "hi\n" {
		t.Fatalf("hutch exec: code %d, stdout %q", code, out)
	}
	out, _, code = d.cli("piped input", "exec", "-i", id, "--", "cat")
	if code != 0 || out != "piped input" {
		t.Fatalf("hutch exec -i: code %d, stdout %q", code, out)
	}
	_, _, code = d.cli("", "exec", "--timeout", "500ms", id, "--", "sleep", "10")
	if code != 124 {
		t.Fatalf("hutch exec timeout exit code = %d, want 124", code)
	}
	out, _, code = d.cli("", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "cli") {
		t.Fatalf("hutch list: code %d\n%s", code, out)
	}
	if _, _, code = d.cli("", "stop", "--wait", id); code != 0 {
		t.Fatalf("hutch stop: code %d", code)
	}
	_, errOut, code = d.cli("", "exec", id, "--", "true")
	if code != 125 || !strings.Contains(errOut, "S004") {
		t.Fatalf("exec after stop: code %d, stderr %q; want 125 with S004", code, errOut)
	}
	assertNoLeftovers(t, "", id)
}

func TestOverlayIsPrivateAndImageUnchanged(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	a := d.create(api.CreateRequest{Image: "python"})
	b := d.create(api.CreateRequest{Image: "python"})
	if r := d.exec(a, "sh", "-c", "echo secret > /usr/lib/hutch-probe && cat /usr/lib/hutch-probe"); r.Stdout != "secret\n" {
		t.Fatalf("write in sandbox a: %+v", r)
	}
	if r := d.exec(b, "cat", "/usr/lib/hutch-probe"); r.ExitCode == nil || *r.ExitCode == 0 {
		t.Fatalf("sandbox b sees a's file: %+v", r)
	}
	hits, _ := filepath.Glob(filepath.Join(testutil.ImageCacheDir(), "*", "*", "rootfs", "usr", "lib", "hutch-probe"))
	more, _ := filepath.Glob(filepath.Join(testutil.ImageCacheDir(), "*", "rootfs", "usr", "lib", "hutch-probe"))
	if len(hits)+len(more) > 0 {
		t.Fatalf("the write reached the image cache: %v %v", hits, more)
	}
}

// TestExecSemantics: an exec's exit codes, stdin, stdout and stderr,
// timeout, workdir, argv and cmd, output cap, and env layers (image <
// create < sandbox::env::set < exec), end to end through the API. It runs
// in the first runtime of HUTCH_TEST_RUNTIMES only: what an exec does in
// each runtime (exit codes, stdin, output, workdir, env, timeout) is the
// runtime contract suite's (internal/runtime/runtimesuite), which every
// backend runs; what is left here is the daemon's, the same in every
// runtime.
func TestExecSemantics(t *testing.T) {
	d := startRuntimesDaemon(t, testutil.Runtimes()[:1], "")
	id := d.create(api.CreateRequest{Image: "bb", Env: api.Env{"LAYER=create", "CREATE_ONLY=1"}})
	runExecCases(t, d, id)
}

// runExecCases runs TestExecSemantics's cases in sandbox id, each a subtest.
func runExecCases(t *testing.T, d *daemon, id string) {
	ctx := context.Background()
	env, err := d.c.SetEnv(ctx, id, api.Env{"SET_ONLY=2"})
	if err != nil || env.Env["SET_ONLY"] != "2" || env.Effective["LAYER"] != "create" || env.Effective["IMAGE_ONLY"] != "0" || env.Env["IMAGE_ONLY"] != "" {
		t.Fatalf("sandbox::env::set: %+v, %v", env, err)
	}
	code := func(r api.ExecResponse) int {
		if r.ExitCode == nil {
			return -1
		}
		return *r.ExitCode
	}
	tests := []struct {
		name  string
		req   api.ExecRequest
		check func(t *testing.T, r api.ExecResponse)
	}{
		{"exit status", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "exit 7"}}, func(t *testing.T, r api.ExecResponse) {
			if code(r) != 7 || r.Success {
				t.Errorf("got %+v", r)
			}
		}},
		{"stdin", api.ExecRequest{Cmd: "busybox", Args: []string{"tr", "a-z", "A-Z"}, Stdin: base64.StdEncoding.EncodeToString([]byte("abc\n"))}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "ABC\n" || !r.Success {
				t.Errorf("got %+v", r)
			}
		}},
		{"env layering", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "echo $LAYER $IMAGE_ONLY $CREATE_ONLY $SET_ONLY $EXEC_ONLY"}, Env: api.Env{"LAYER=exec", "EXEC_ONLY=3"}}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "exec 0 1 2 3\n" {
				t.Errorf("got %q", r.Stdout)
			}
		}},
		{"create env stays the base", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "echo $LAYER $EXEC_ONLY"}}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "create\n" {
				t.Errorf("got %q", r.Stdout)
			}
		}},
		{"workdir", api.ExecRequest{Cmd: "pwd", Workdir: "/tmp"}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "/tmp\n" {
				t.Errorf("got %q", r.Stdout)
			}
		}},
		{"cmd split shell-word style", api.ExecRequest{Cmd: `echo 'a  b'`}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "a  b\n" {
				t.Errorf("got %+v", r)
			}
		}},
		{"argv not through a shell", api.ExecRequest{Argv: []string{"echo", "$LAYER", "a  b"}}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "$LAYER a  b\n" {
				t.Errorf("got %+v", r)
			}
		}},
		{"not found is 127", api.ExecRequest{Cmd: "no-such-program"}, func(t *testing.T, r api.ExecResponse) {
			if code(r) != 127 || !strings.Contains(r.Stderr, "not found") {
				t.Errorf("got %+v", r)
			}
		}},
		{"not executable is 126", api.ExecRequest{Cmd: "/etc/passwd"}, func(t *testing.T, r api.ExecResponse) {
			if code(r) != 126 {
				t.Errorf("got %+v", r)
			}
		}},
		{"signal is 128+n", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "kill -9 $$"}}, func(t *testing.T, r api.ExecResponse) {
			if code(r) != 137 || r.OOMKilled {
				t.Errorf("got %+v", r)
			}
		}},
		{"stderr apart", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "echo out; echo err >&2"}}, func(t *testing.T, r api.ExecResponse) {
			if r.Stdout != "out\n" || r.Stderr != "err\n" {
				t.Errorf("got %+v", r)
			}
		}},
		{"output cap flagged", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "head -c 3145728 /dev/zero | busybox tr '\\0' x"}}, func(t *testing.T, r api.ExecResponse) {
			if !r.StdoutTruncated || len(r.Stdout) != 1<<20 || !r.Success {
				t.Errorf("len %d truncated %v success %v", len(r.Stdout), r.StdoutTruncated, r.Success)
			}
		}},
		{"timeout keeps partial output", api.ExecRequest{Cmd: "sh", Args: []string{"-c", "echo partial; sleep 100"}, TimeoutMs: 3000}, func(t *testing.T, r api.ExecResponse) {
			if !r.TimedOut || r.ExitCode != nil || r.Success || r.Stdout != "partial\n" {
				t.Errorf("got %+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.SandboxID = id
			r, err := d.c.Exec(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

func TestTimeoutReturnsPartialOutput(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	start := time.Now()
	r, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Cmd: "sh",
		Args: []string{"-c", "echo partial; sleep infinity"}, TimeoutMs: 1000})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != nil || r.Success || r.Stdout != "partial\n" {
		t.Fatalf("got %+v", r)
	}
	// Never before the timeout (a timer never fires early: no load can
	// break this). The sleep never ends: the exec came back because its
	// timeout ended it, not by waiting for the sleep.
	if took < time.Second {
		t.Fatalf("timeout of 1s took %v", took)
	}
	// The whole process group was killed: nothing is left sleeping.
	ps := d.exec(id, "python3", "-c", "import os; print(sum(1 for p in os.listdir('/proc') if p.isdigit() and open(f'/proc/{p}/cmdline','rb').read().startswith(b'sleep')))")
	if strings.TrimSpace(ps.Stdout) != "0" {
		t.Fatalf("sleep processes left after the timeout: %q", ps.Stdout)
	}
	// Through the function endpoint the same timeout is S200.
	var out api.ExecResponse
	err = d.c.Call(context.Background(), api.FnExec, api.ExecRequest{SandboxID: id, Cmd: "sleep", Args: []string{"5"}, TimeoutMs: 300}, &out)
	env := wantCode(t, err, "S200")
	if !strings.Contains(env.Message, "exec timed out after 300ms") {
		t.Fatalf("S200 message = %q", env.Message)
	}
}

// TestExecTimeoutOverTheCap: a timeout over max_exec_timeout_ms is refused
// (S001 naming the cap) on every path, not cut to the cap in silence; a
// timeout is reported as the one the exec ran with, the default included.
func TestExecTimeoutOverTheCap(t *testing.T) {
	d := startDaemon(t, baseConfig("max_exec_timeout_ms: 2000\ndefault_exec_timeout_ms: 1000\n"))
	id := d.create(api.CreateRequest{Image: "python"})
	over := api.ExecRequest{SandboxID: id, Cmd: "true", TimeoutMs: 5000}
	names := func(path, msg string) {
		t.Helper()
		if !strings.Contains(msg, "max_exec_timeout_ms") || !strings.Contains(msg, "2000") {
			t.Errorf("%s: message %q does not name the cap", path, msg)
		}
	}
	_, err := d.c.Exec(context.Background(), over)
	names("REST", wantCode(t, err, "S001").Message)
	_, err = d.c.ExecStream(context.Background(), over, func(string, json.RawMessage) error { return nil })
	names("REST stream", wantCode(t, err, "S001").Message)
	var out api.ExecResponse
	err = d.c.Call(context.Background(), api.FnExec, over, &out)
	names("function", wantCode(t, err, "S001").Message)
	_, errOut, code := d.cli("", "exec", id, "--timeout", "5s", "--", "true")
	if code != 125 || !strings.Contains(errOut, "S001") || !strings.Contains(errOut, "2s") {
		t.Errorf("hutch exec --timeout 5s: %d %q", code, errOut)
	}
	// At the cap, and by default: the message names the timeout it ran with.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "2s"}, "hutch: timed out after 2s"},
		{nil, "hutch: timed out after 1s"},
	} {
		args := append(append([]string{"exec", id}, tt.args...), "--", "sleep", "100")
		if _, errOut, code := d.cli("", args...); code != 124 || !strings.Contains(errOut, tt.want) {
			t.Errorf("hutch %v: %d %q, want 124 and %q", args, code, errOut, tt.want)
		}
	}
	r, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Cmd: "sleep", Args: []string{"100"}})
	if err != nil || !r.TimedOut || r.TimeoutMs != 1000 {
		t.Errorf("exec with the default timeout: %+v %v, want timed out with timeout_ms 1000", r, err)
	}
}

func TestOutOfMemoryEndsOnlyThatSandbox(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	victim := d.create(api.CreateRequest{Image: "python", MemoryMB: 128})
	bystander := d.create(api.CreateRequest{Image: "python"})
	_, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: victim, Cmd: "python3",
		Args: []string{"-c", "b = bytearray(1 << 30); print(len(b))"}, TimeoutMs: 60_000})
	env := wantCode(t, err, "S004")
	if !strings.Contains(env.Message, "out of memory") {
		t.Fatalf("in-flight exec error does not say out of memory: %q", env.Message)
	}
	_, err = d.c.Exec(context.Background(), api.ExecRequest{SandboxID: victim, Cmd: "true"})
	env = wantCode(t, err, "S004")
	if !strings.Contains(env.Message, "out of memory") {
		t.Fatalf("later exec error does not say out of memory: %q", env.Message)
	}
	info, err := d.c.Get(context.Background(), victim)
	if err != nil || !info.Stopped || !strings.Contains(info.StopReason, "out of memory") {
		t.Fatalf("get victim: %+v, %v", info, err)
	}
	if r := d.exec(bystander, "python3", "-c", "print('alive')"); r.Stdout != "alive\n" {
		t.Fatalf("bystander: %+v", r)
	}
	if err := d.c.Health(context.Background()); err != nil {
		t.Fatalf("daemon unhealthy: %v", err)
	}
	assertNoLeftovers(t, "", victim)
}

func TestConcurrentExecs(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, d.create(api.CreateRequest{Image: "python"}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := ids[i%len(ids)]
			want := fmt.Sprintf("exec-%d", i)
			r, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Cmd: "python3",
				Args: []string{"-c", "import sys, time; time.sleep(0.2); print(sys.argv[1])", want}})
			if err != nil {
				errs <- err
				return
			}
			if r.Stdout != want+"\n" {
				errs <- fmt.Errorf("exec %d got %q", i, r.Stdout)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStopLeavesNothing: in each runtime a stop with wait leaves nothing
// of the sandbox, a background process's included, and a second stop is
// fine.
func TestStopLeavesNothing(t *testing.T) {
	d := startTestedRuntimesDaemon(t, "")
	eachRuntime(t, d, func(t *testing.T, rt string) {
		id := d.create(api.CreateRequest{Image: "bb", Runtime: rt})
		d.setup(id, "sh", "-c", "sleep 1000 >/dev/null 2>&1 &")
		if len(leftovers("", []string{id})) == 0 {
			t.Fatal("the leak scanner sees nothing of a live sandbox; it cannot prove a stop clean")
		}
		if _, err := d.c.Stop(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
		if left := leftovers("", []string{id}); len(left) > 0 {
			t.Fatalf("after stop --wait: %v", left)
		}
		// Stopping twice is fine.
		if _, err := d.c.Stop(context.Background(), id, true); err != nil {
			t.Fatalf("second stop: %v", err)
		}
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	stopped := d.create(api.CreateRequest{Image: "python"})
	if _, err := d.c.Stop(context.Background(), stopped, true); err != nil {
		t.Fatal(err)
	}
	raw := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"malformed json", "POST", "/v1/sandboxes", `{"image": "python"`, 400, "S001", "truncated JSON"},
		{"unknown field", "POST", "/v1/sandboxes", `{"image": "python", "imgae": 1}`, 400, "S001", "unknown field"},
		{"bad env name", "POST", "/v1/sandboxes", `{"image": "python", "env": ["1X=2"]}`, 400, "S001", "valid variable name"},
		{"malformed id", "POST", "/v1/sandboxes/not-a-uuid/exec", `{"cmd": "true"}`, 400, "S001", "not a UUID"},
		{"cmd with whitespace plus args", "POST", "/v1/sandboxes/" + id + "/exec", `{"cmd": "ls -l", "args": ["/"]}`, 400, "S001", "whitespace"},
		{"argv with cmd", "POST", "/v1/sandboxes/" + id + "/exec", `{"cmd": "ls", "argv": ["ls"]}`, 400, "S001", "either argv or cmd"},
		{"bad base64 stdin", "POST", "/v1/sandboxes/" + id + "/exec", `{"cmd": "cat", "stdin": "!!!"}`, 400, "S001", "base64"},
		{"unknown id", "POST", "/v1/sandboxes/00000000-0000-4000-8000-000000000000/exec", `{"cmd": "true"}`, 404, "S002", "not found"},
		{"unknown id delete", "DELETE", "/v1/sandboxes/00000000-0000-4000-8000-000000000000", ``, 404, "S002", "not found"},
		{"stopped sandbox", "POST", "/v1/sandboxes/" + stopped + "/exec", `{"cmd": "true"}`, 409, "S004", "stopped"},
		{"unknown image", "POST", "/v1/sandboxes", `{"image": "ruby"}`, 403, "S100", "allowed images: python, node"},
		{"oci ref as image", "POST", "/v1/sandboxes", `{"image": "docker.io/library/python:3"}`, 403, "S100", "not an OCI reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := raw(tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(body, `"code":"`+tt.code+`"`) || !strings.Contains(body, tt.msg) {
				t.Fatalf("%s %s: %d %s; want %d %s containing %q", tt.method, tt.path, status, body, tt.status, tt.code, tt.msg)
			}
		})
	}
	list, err := d.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sandboxes) != 2 {
		t.Fatalf("bad requests changed the sandbox set: %+v", list.Sandboxes)
	}
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	testutil.RequiresIntegration(t)
	// An "agent" that exits at once: the runtime starts, the agent never answers.
	bad := filepath.Join(t.TempDir(), "hutch-agent")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho agent-broke >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWithAgent(t, baseConfig(""), bad)
	_, err := d.c.Create(context.Background(), api.CreateRequest{Image: "python"})
	env := wantCode(t, err, "S300")
	t.Logf("boot failure message: %s", env.Message)
	list, err := d.c.List(context.Background())
	if err != nil || len(list.Sandboxes) != 0 {
		t.Fatalf("list after failed create: %+v, %v", list, err)
	}
	assertNoLeftovers(t, d.dataDir)
	entries, _ := filepath.Glob(filepath.Join(d.dataDir, "gvisor", "sandboxes", "*"))
	if len(entries) > 0 {
		t.Fatalf("sandbox directories left: %v", entries)
	}
}

func TestKill9ThenRestartLeavesNothingUnlisted(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	a := d.create(api.CreateRequest{Image: "python"})
	b := d.create(api.CreateRequest{Image: "python"})
	d.setup(a, "sh", "-c", "sleep 1000 >/dev/null 2>&1 &")
	d.kill9()
	d.start()
	list, err := d.c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]api.SandboxInfo{}
	for _, sb := range list.Sandboxes {
		seen[sb.SandboxID] = sb
	}
	for _, id := range []string{a, b} {
		sb, ok := seen[id]
		if !ok {
			t.Errorf("sandbox %s not listed after restart", id)
			continue
		}
		if !sb.Stopped {
			// A listed live sandbox must answer.
			if r := d.exec(id, "true"); !r.Success {
				t.Errorf("listed live sandbox %s does not answer", id)
			}
			continue
		}
		if _, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Cmd: "true"}); err == nil {
			t.Errorf("stopped sandbox %s still executes", id)
		}
		assertNoLeftovers(t, "", id)
	}
	// The restarted daemon works.
	c := d.create(api.CreateRequest{Image: "python"})
	if r := d.exec(c, "echo", "ok"); r.Stdout != "ok\n" {
		t.Fatalf("new sandbox after restart: %+v", r)
	}
}

func TestSIGTERMStopsEverySandbox(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ids := []string{d.create(api.CreateRequest{Image: "python"}), d.create(api.CreateRequest{Image: "python"})}
	execDone := make(chan error, 1)
	go func() {
		_, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: ids[0], Cmd: "sleep", Args: []string{"100"}, TimeoutMs: 100_000})
		execDone <- err
	}()
	if !testutil.Poll(time.Minute, func() bool { return sandboxState(t, d, ids[0]).ExecInFlight == 1 }) {
		t.Fatal("the exec never showed as in flight")
	}
	d.terminate()
	// A shutdown that waited for the exec in flight would let it end in
	// success; a shutdown that stops the sandbox under it fails it.
	if err := <-execDone; err == nil {
		t.Error("the exec in flight completed: the SIGTERM shutdown waited for it")
	}
	assertNoLeftovers(t, d.dataDir, ids...)
}
