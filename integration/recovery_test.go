package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Crash recovery (issue 6, item 6): after kill -9 and a restart every
// sandbox is re-adopted or destroyed, and nothing leaks; SIGTERM stops
// every sandbox within 10 s, busy ones included.

// bundleIDs lists the sandbox ids that have a bundle directory in d's
// data dir: every sandbox the runtime has started or is starting.
func (d *daemon) bundleIDs() []string {
	entries, _ := os.ReadDir(filepath.Join(d.dataDir, "gvisor", "sandboxes"))
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

func TestKill9MidFlightThenRestart(t *testing.T) {
	// Without the crash watchdog, the restart is what cleans up.
	d := startDaemon(t, baseConfig("crash_watchdog: false\n"))
	ctx := context.Background()
	a := d.create(api.CreateRequest{Image: "python"})
	b := d.create(api.CreateRequest{Image: "python", MemoryMB: 256})
	d.setup(b, "sh", "-c", "sleep 1000 >/dev/null 2>&1 &")
	d.setup(b, "sh", "-c", "head -c 20000000 /dev/zero > /var/data")
	// An exec in flight and a create in flight when the daemon dies.
	go d.c.Exec(ctx, api.ExecRequest{SandboxID: a, Cmd: "sleep", Args: []string{"100"}, TimeoutMs: 100_000})
	go d.c.Create(ctx, api.CreateRequest{Image: "python"})
	if !testutil.Poll(time.Minute, func() bool { return len(d.bundleIDs()) >= 3 }) {
		t.Fatalf("the third sandbox never started: %v", d.bundleIDs())
	}
	d.kill9()
	ids := d.bundleIDs()
	t.Logf("sandboxes on disk at the crash: %v", ids)
	if len(leftovers(d.dataDir, ids)) == 0 {
		t.Fatal("the leak scanner sees nothing of the crashed daemon's sandboxes; it cannot prove a restart clean")
	}

	d.start()
	// The restarted daemon destroyed every sandbox of the crashed one:
	// no process, mount, cgroup or directory is left.
	assertNoLeftovers(t, d.dataDir, ids...)
	list, err := d.c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list.Sandboxes {
		if !sb.Stopped {
			t.Errorf("sandbox %s of the crashed daemon listed live", sb.SandboxID)
		}
		if !slices.Contains(ids, sb.SandboxID) {
			t.Errorf("sandbox %s listed but never on disk", sb.SandboxID)
		}
	}
	for _, id := range []string{a, b} {
		info, err := d.c.Get(ctx, id)
		if err != nil || !info.Stopped || !strings.Contains(info.StopReason, "daemon restarted") {
			t.Errorf("sandbox %s after the restart: %+v, %v", id, info, err)
		}
		_, err = d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: "true"})
		wantCode(t, err, "S004")
	}
	if m := d.scrape(""); metricValue(m, "hutch_sandboxes_live") != 0 {
		t.Errorf("hutch_sandboxes_live after the restart: %v", metricValue(m, "hutch_sandboxes_live"))
	}
	// And works.
	c := d.create(api.CreateRequest{Image: "python"})
	if r := d.exec(c, "echo", "ok"); r.Stdout != "ok\n" {
		t.Fatalf("new sandbox after the restart: %+v", r)
	}
}

func TestSIGTERMStopsBusySandboxes(t *testing.T) {
	d := startDaemon(t, baseConfig("writable_layer_mb: 64\n"))
	ctx := context.Background()
	bomb := d.create(api.CreateRequest{Image: "python"})
	busy := d.create(api.CreateRequest{Image: "python"})
	full := d.create(api.CreateRequest{Image: "python"})
	idle := d.create(api.CreateRequest{Image: "python"})
	if r := d.exec(full, "sh", "-c", "head -c 100000000 /dev/zero > /var/fill; echo $?"); r.Stdout == "0\n" {
		t.Fatalf("a 100 MB write fit in a 64 MiB layer: %+v", r)
	}
	d.exec(bomb, "sh", "-c", "f() { f | f & }; f >/dev/null 2>&1 &")
	execDone := make(chan error, 1)
	go func() {
		_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: busy, Cmd: "python3", Args: []string{"-c", "while True: pass"}, TimeoutMs: 100_000})
		execDone <- err
	}()
	if !testutil.Poll(time.Minute, func() bool { return sandboxState(t, d, busy).ExecInFlight == 1 }) {
		t.Fatal("the busy loop's exec never showed as in flight")
	}
	if !testutil.Poll(time.Minute, func() bool {
		m, err := d.c.Metrics(ctx, bomb)
		return err == nil && m.Pids > 200
	}) {
		t.Fatal("the fork bomb did not get going")
	}

	start := time.Now()
	d.terminate()
	took := time.Since(start)
	t.Logf("SIGTERM with a fork bomb, a busy loop, a full disk and an idle sandbox: exited after %v", took)
	// A shutdown that waited for the busy loop's exec would let it end
	// at its timeout, with a result; one that stops the sandbox under it
	// fails it.
	if err := <-execDone; err == nil {
		t.Error("the busy loop's exec ended with a result: the SIGTERM shutdown waited for it")
	}
	assertNoLeftovers(t, d.dataDir, bomb, busy, full, idle)
}
