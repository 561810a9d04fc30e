package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestProcessOutputIsActivity: a sandbox whose background processes wrote
// output since the reaper's last pass is kept; a silent one is reaped. The
// processes are started on the agent itself: the processes service is not
// the core's.
func TestProcessOutputIsActivity(t *testing.T) {
	m, _, _ := inprocess(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	silent := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 60})
	chatty := create(t, m, api.CreateRequest{Image: "python", IdleTimeoutSecs: 60})
	gate := filepath.Join(t.TempDir(), "gate")
	client := func(id string) *agentclient.Client {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.sandboxes[id].client()
	}
	start := func(id string, argv ...string) int32 {
		events, err := client(id).Start(ctx, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: argv}, RingBytes: m.cfg.ProcessOutputBytes})
		if err != nil {
			t.Fatalf("start %q: %v", argv, err)
		}
		defer events.Close()
		ev, err := events.Recv()
		if err != nil || ev.GetStarted() == nil {
			t.Fatalf("start %q: %v %v", argv, ev, err)
		}
		return ev.GetStarted().GetPid()
	}
	start(silent, "sleep", "1000")
	pid := start(chatty, "sh", "-c", `echo one; while [ ! -e "$0" ]; do sleep 0.02; done; echo two; exec sleep 1000`, gate)
	wrote := func(n int64) func() bool {
		return func() bool {
			ps, _ := client(chatty).List(ctx)
			for _, p := range ps {
				if p.GetPid() == pid {
					return p.GetStdoutEnd() >= n
				}
			}
			return false
		}
	}
	alive := func(id string) bool {
		_, err := m.Get(ctx, api.GetRequest{SandboxID: id})
		return err == nil
	}
	// Each pass looks at a time past both idle timeouts: only new output
	// since the last pass keeps a sandbox.
	pass := func() {
		m.reaper.Reap(time.Now().Add(2 * time.Minute))
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
