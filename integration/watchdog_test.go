package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// A crashed daemon (issue 12, item 6): a sandbox whose PID 1 is stopped
// cannot notice that its daemon is gone, so ending it must not need the
// agent's help.

// stopPID1Script connects to the host at $SVC, waits for the host's go,
// sends SIGSTOP to PID 1 (the agent) and then tells the host.
const stopPID1Script = `
import os, signal, socket, urllib.parse
u = urllib.parse.urlsplit(os.environ["SVC"])
s = socket.create_connection((u.hostname, u.port), timeout=60)
s.recv(1)
os.kill(1, signal.SIGSTOP)
s.sendall(b"stopped")
`

// stopPID1 stops the agent of network sandbox id, which reaches the host
// listener ln as $SVC. It returns once PID 1 has been sent SIGSTOP, and
// only after the exec that starts the script has returned, so that the
// stop never catches an exec in flight.
func (d *daemon) stopPID1(id string, ln net.Listener) {
	d.t.Helper()
	d.exec(id, "sh", "-c", `python3 -c "$1" >/dev/null 2>&1 &`, "sh", stopPID1Script)
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(2 * time.Minute))
	conn, err := ln.Accept()
	if err != nil {
		d.t.Fatalf("the sandbox never connected: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := conn.Write([]byte("g")); err != nil {
		d.t.Fatal(err)
	}
	if b, err := io.ReadAll(conn); string(b) != "stopped" {
		d.t.Fatalf("the sandbox did not stop its PID 1: %q, %v", b, err)
	}
}

func TestSandboxWithStoppedPID1DiesWithItsDaemon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Another daemon on another data dir, whose sandbox must live on.
	other := startDaemon(t, baseConfig(""))
	bystander := other.create(api.CreateRequest{Image: "python"})

	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", Network: true, Env: api.Env{
		fmt.Sprintf("SVC=http://127.0.0.1:%d/", ln.Addr().(*net.TCPAddr).Port),
	}})
	d.stopPID1(id, ln)
	d.kill9()

	// Nothing of the sandbox is left — processes, mounts, cgroups, veth,
	// firewall rules, directories — without a restart of the daemon.
	if !testutil.Poll(2*time.Minute, func() bool { return len(leftovers(d.dataDir, []string{id})) == 0 }) {
		t.Errorf("the sandbox of a killed daemon outlived it:\n  %s", strings.Join(leftovers(d.dataDir, []string{id}), "\n  "))
	}
	if r := other.exec(bystander, "echo", "alive"); r.Stdout != "alive\n" {
		t.Errorf("another daemon's sandbox after the crash: %+v", r)
	}

	// A restart finds the sandbox stopped (and cleans up whatever the
	// check above found).
	d.start()
	info, err := d.c.Get(context.Background(), id)
	if err != nil || !info.Stopped {
		t.Errorf("sandbox %s after the restart: %+v, %v", id, info, err)
	}
}
