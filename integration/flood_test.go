package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// A sandbox whose PID 1 is hostile (issue 12, items 2 and 8) can write
// its own frames into the agent's stream, or stop the agent. Either ends
// that sandbox with a clear reason, and costs the daemon a bounded amount
// of memory. Code in the sandbox can stop the agent but not reach its
// stream (TestForkBombIsContained checks that), so the flood comes from a
// hostile agent (testdata/hostileagent).

// hostileAgent builds testdata/hostileagent once per test process.
func hostileAgent(t *testing.T) string {
	t.Helper()
	return testutil.BuildBinary(t, "./integration/testdata/hostileagent")
}

// provoke has the hostile agent of sandbox id carry out the attack of
// trigger (a file name of testdata/hostileagent), which ends the sandbox;
// it returns the exec's error.
func (d *daemon) provoke(id, trigger string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "touch /tmp/" + trigger + "; sleep 60"}})
	return err
}

// floodMargin is how much the daemon's heap may grow over a flood: the
// session holds a few windows at most, where the flood is 64 MiB.
const floodMargin = 32 << 20

func TestFloodFromSandboxStopsIt(t *testing.T) {
	d := startDaemonWithAgent(t, baseConfig(""), hostileAgent(t))
	id := d.create(api.CreateRequest{Image: "python"})
	d.exec(id, "true") // the daemon's buffers for an exec are in the baseline
	before := d.heapInUse()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := d.provoke(id, "hostile-flood")
	const reason = "the sandbox broke the agent protocol: it opened a stream"
	var env *api.ErrorEnvelope
	if !errors.As(err, &env) || env.Code != "S004" || !strings.Contains(env.Message, reason) {
		t.Errorf("exec during the flood: %v; want S004 with the reason %q", err, reason)
	}
	if info, err := d.c.Get(ctx, id); err != nil || !info.Stopped || info.StopReason != reason {
		t.Errorf("sandbox after the flood: %+v, %v; want stopped with %q", info, err, reason)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	after := d.heapInUse()
	t.Logf("daemon heap in use: %d MiB before the flood, %d MiB after the stop", before>>20, after>>20)
	if after > before+floodMargin {
		t.Errorf("the daemon's heap grew by %d MiB over a flood from one stopped sandbox, want at most %d MiB",
			(after-before)>>20, floodMargin>>20)
	}
}

func TestStuckAgentIsNamed(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The exec stops the agent, which then never answers it: the call's
	// deadline is the exec's timeout plus the agent's 5 s grace.
	_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", "import os, signal; os.kill(1, signal.SIGSTOP)"}, TimeoutMs: 1000})
	env := wantCode(t, err, "S004")
	const want = "the agent did not answer within 6 s"
	if !strings.Contains(env.Message, want) || strings.Contains(env.Message, "rpc error") {
		t.Errorf("exec that stops the agent: %q, want %q", env.Message, want)
	}
	if info, err := d.c.Get(ctx, id); err != nil || !info.Stopped || info.StopReason != want {
		t.Errorf("sandbox after the exec: %+v, %v; want stopped with %q", info, err, want)
	}
}

// heapInUse is the daemon's go_memstats_heap_inuse_bytes.
func (d *daemon) heapInUse() int64 {
	d.t.Helper()
	const name = "go_memstats_heap_inuse_bytes "
	for _, l := range strings.Split(d.scrape(d.token), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				d.t.Fatalf("reading %q: %v", l, err)
			}
			return int64(f)
		}
	}
	d.t.Fatalf("the daemon's metrics have no %s", name)
	return 0
}
