package integration

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// State (issue 15): pause and resume, auto-resume, on_idle, lifetimes and
// metadata, on real sandboxes.

// counterServer serves, on 127.0.0.1:7000 inside a sandbox, a counter
// held only in the server's memory: each connection gets the next number.
const counterServer = `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000)); s.listen(8)
n = 0
while True:
    c, _ = s.accept(); n += 1; c.sendall(str(n).encode()); c.close()
`

// counterClient prints the next number of counterServer, waiting for it
// to listen first.
const counterClient = `import socket, time
for _ in range(300):
    try:
        s = socket.create_connection(("127.0.0.1", 7000)); break
    except OSError:
        time.sleep(0.05)
print(s.recv(16).decode())
`

// nextCount asks sandbox id's counter server for its next number.
func (d *daemon) nextCount(id string) int {
	d.t.Helper()
	r := d.execReq(api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", counterClient}, TimeoutMs: setupTimeoutMs})
	n, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		d.t.Fatalf("counter answered %q (stderr %q)", r.Stdout, r.Stderr)
	}
	return n
}

// startCounter starts counterServer in sandbox id, and with busy a
// CPU-bound loop beside it.
func (d *daemon) startCounter(id string, busy bool) {
	d.t.Helper()
	procs := [][]string{{"python3", "-c", counterServer}}
	if busy {
		procs = append(procs, []string{"sh", "-c", "while :; do :; done"})
	}
	for _, argv := range procs {
		if _, err := d.c.StartProcess(context.Background(), api.ProcessStartRequest{SandboxID: id, Argv: argv}); err != nil {
			d.t.Fatalf("starting %q: %v", argv[0], err)
		}
	}
}

func TestPauseAndResume(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python", Metadata: map[string]string{"suite": "state"}})
	d.setup(id, "sh", "-c", "echo kept > /root/note")
	d.startCounter(id, true)
	if n := d.nextCount(id); n != 1 {
		t.Fatalf("first count %d, want 1", n)
	}

	// Paused through the CLI: listed as paused, every call S005.
	if out, errOut, code := d.cli("", "pause", id); code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("hutch pause: code %d stdout %q stderr %q", code, out, errOut)
	}
	if out, _, code := d.cli("", "list", "--state", "paused"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "paused") {
		t.Errorf("hutch list --state paused:\n%s", out)
	}
	if info := sandboxState(t, d, id); info.State != "paused" || info.PausedAt == "" {
		t.Errorf("a paused sandbox is listed as %+v", info)
	}
	_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
	wantCode(t, err, "S005")
	_, err = d.c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/root/note"})
	wantCode(t, err, "S005")
	if status, body := d.raw("POST", "/v1/sandboxes/"+id+"/exec", "", `{"argv":["true"]}`); status != http.StatusConflict || !strings.Contains(body, "S005") {
		t.Errorf("REST exec on a paused sandbox: %d %s", status, body)
	}
	e := dialEngine(t, d)
	if env := e.call(api.FnExec, map[string]any{"sandbox_id": id, "argv": []string{"true"}}, nil); env == nil || env.Code != "S005" {
		t.Errorf("engine exec on a paused sandbox: %+v, want S005", env)
	}

	// Frozen, its busy loop uses no CPU.
	before, err := d.c.Metrics(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	after, err := d.c.Metrics(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if used := after.CPUSeconds - before.CPUSeconds; used > 0.2 {
		t.Errorf("a frozen sandbox with a busy loop used %.2f s of CPU in a second", used)
	}

	// Resumed through the engine: memory and files as they were.
	var st api.StateResponse
	if env := e.call(api.FnResume, map[string]any{"sandbox_id": id}, &st); env != nil || st.State != "running" || !st.Changed {
		t.Fatalf("engine resume: %+v %+v", env, st)
	}
	if n := d.nextCount(id); n != 2 {
		t.Errorf("after freeze and resume the counter gave %d, want 2", n)
	}
	if r := d.exec(id, "cat", "/root/note"); r.Stdout != "kept\n" {
		t.Errorf("after resume the note reads %q", r.Stdout)
	}

	// Again through REST and the function endpoint.
	if status, body := d.raw("POST", "/v1/sandboxes/"+id+"/pause", "", `{"depth":"freeze"}`); status != 200 || !strings.Contains(body, `"paused"`) {
		t.Fatalf("REST pause: %d %s", status, body)
	}
	if status, body := d.raw("POST", "/v1/functions/sandbox::resume", "", `{"sandbox_id":"`+id+`"}`); status != 200 || !strings.Contains(body, `"running"`) {
		t.Fatalf("function endpoint resume: %d %s", status, body)
	}
	if n := d.nextCount(id); n != 3 {
		t.Errorf("after a second pause the counter gave %d, want 3", n)
	}
	if out, errOut, code := d.cli("", "resume", id); code != 0 {
		t.Errorf("resuming a running sandbox: code %d stdout %q stderr %q", code, out, errOut)
	}

	// Bad input changes nothing.
	if status, body := d.raw("POST", "/v1/sandboxes/"+id+"/pause", "", `{"depth":"coma"}`); status != 400 || !strings.Contains(body, "S001") {
		t.Errorf("pause with a bad depth: %d %s", status, body)
	}
	if info := sandboxState(t, d, id); info.State != "running" {
		t.Errorf("a refused pause left the sandbox %s", info.State)
	}

	// A paused sandbox stops cleanly.
	if _, err := d.c.Pause(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, "", id)
}

func TestAutoResumeAndOnIdlePause(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()

	auto := d.create(api.CreateRequest{Image: "python", AutoResume: true})
	d.startCounter(auto, false)
	if n := d.nextCount(auto); n != 1 {
		t.Fatalf("first count %d", n)
	}
	if _, err := d.c.Pause(ctx, auto, ""); err != nil {
		t.Fatal(err)
	}
	if n := d.nextCount(auto); n != 2 {
		t.Errorf("the call that resumed the sandbox counted %d, want 2", n)
	}
	if info := sandboxState(t, d, auto); info.State != "running" || !info.AutoResume {
		t.Errorf("after the auto-resume: %+v", info)
	}

	// Idle, it is paused rather than stopped, and stays paused.
	idle := d.create(api.CreateRequest{Image: "python", IdleTimeoutSecs: 1, OnIdle: api.OnIdlePause})
	if !testutil.Poll(60*time.Second, func() bool { return sandboxState(t, d, idle).State == "paused" }) {
		t.Fatalf("the idle sandbox was not paused: %+v", sandboxState(t, d, idle))
	}
	_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: idle, Argv: []string{"true"}})
	wantCode(t, err, "S005")
	if _, err := d.c.Resume(ctx, idle); err != nil {
		t.Fatal(err)
	}
	d.exec(idle, "true")
}

func TestLifetimeAndMetadata(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	a := d.create(api.CreateRequest{Image: "python", TimeoutSecs: 3600, Metadata: map[string]string{"team": "red", "run": "7"}})
	b := d.create(api.CreateRequest{Image: "python", Metadata: map[string]string{"team": "blue"}})

	list, err := d.c.ListFiltered(ctx, api.ListRequest{Metadata: map[string]string{"team": "red"}})
	if err != nil || len(list.Sandboxes) != 1 || list.Sandboxes[0].SandboxID != a || list.Sandboxes[0].Metadata["run"] != "7" {
		t.Fatalf("list team=red: %+v %v", list, err)
	}
	if status, body := d.raw("GET", "/v1/sandboxes?metadata=team%3Dblue", "", ""); status != 200 || !strings.Contains(body, b) || strings.Contains(body, a) {
		t.Errorf("REST list metadata=team=blue: %d %s", status, body)
	}
	page, err := d.c.ListFiltered(ctx, api.ListRequest{Limit: 1})
	if err != nil || len(page.Sandboxes) != 1 || page.NextToken == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := d.c.ListFiltered(ctx, api.ListRequest{Limit: 1, NextToken: page.NextToken})
	if err != nil || len(rest.Sandboxes) != 1 || rest.Sandboxes[0].SandboxID == page.Sandboxes[0].SandboxID || rest.NextToken != "" {
		t.Errorf("second page: %+v %v", rest, err)
	}

	// set-timeout moves the lifetime: the sandbox ends then, busy or not.
	if out, errOut, code := d.cli("", "set-timeout", a, "2s"); code != 0 || out == "" {
		t.Fatalf("hutch set-timeout: code %d stdout %q stderr %q", code, out, errOut)
	}
	if !testutil.Poll(60*time.Second, func() bool { return sandboxState(t, d, a).Stopped }) {
		t.Fatalf("the sandbox outlived its lifetime: %+v", sandboxState(t, d, a))
	}
	if info := sandboxState(t, d, a); info.StopCause != "lifetime" {
		t.Errorf("stopped with cause %q, want lifetime", info.StopCause)
	}
	_, err = d.c.SetTimeout(ctx, b, 0)
	wantCode(t, err, "S001")
	if _, err := d.c.Create(ctx, api.CreateRequest{Image: "python", Metadata: map[string]string{"k": "\x1b]0;pwned\a"}}); err == nil {
		t.Error("a create with control characters in its metadata was accepted")
	} else {
		wantCode(t, err, "S001")
	}
}
