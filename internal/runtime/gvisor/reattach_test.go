package gvisor

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimesuite"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestAdoptAfterDaemonDeath (issue 35): a sandbox started with Reattach
// survives the end of the Runtime that started it (its ends of the
// stream closed, as the kernel closes a killed daemon's, nothing else
// done); a new Runtime over the same state directory adopts it, its agent
// answers a new session, a process of the first session still runs, and
// its Destroy leaves nothing. A sandbox started without Reattach, or one
// that is gone, is not adopted.
func TestAdoptAfterDaemonDeath(t *testing.T) {
	testutil.RequiresIntegration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stateDir := t.TempDir()
	r1 := runtimeAt(t, stateDir)
	img, err := runtime.DirArtifact(runtimesuite.Rootfs(t))
	if err != nil {
		t.Fatal(err)
	}
	spec := runtime.Spec{ID: uuid.NewString(), Image: img, AgentPath: testutil.BuildBinary(t, "./cmd/hutch-agent"),
		CPUs: 1, MemoryMB: 256, PidsLimit: 512, Hostname: "reattach", Reattach: true}
	inst1, err := r1.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	c1 := dialAgent(ctx, t, inst1)
	ev, err := c1.Start(ctx, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sleep", "600"}, Env: []string{"PATH=" + runtime.DefaultPath}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Recv(); err != nil {
		t.Fatal(err)
	}
	pid := ev.Pid()

	// The first daemon dies: its ends close, its memory of the sandbox
	// goes with it.
	abandon(r1, inst1.(*instance))
	c1.Close()

	r2 := runtimeAt(t, stateDir)
	inst2, err := r2.Adopt(ctx, spec.ID)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	t.Cleanup(func() {
		if err := inst2.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
		assertGone(t, r2, spec.ID)
	})
	c2 := dialAgent(ctx, t, inst2)
	resp, err := c2.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", "kill -0 $0 && echo alive", strconv.Itoa(int(pid))},
		Env: []string{"PATH=" + runtime.DefaultPath}, TimeoutMs: 30000})
	if err != nil {
		t.Fatalf("exec after adoption: %v\nstderr: %s", err, inst2.StderrTail())
	}
	if string(resp.GetStdout()) != "alive\n" {
		t.Errorf("the first session's process after adoption: %q %q (exit %d)", resp.GetStdout(), resp.GetStderr(), resp.GetExitCode())
	}
	if _, err := r2.Adopt(ctx, spec.ID); err == nil {
		t.Error("a sandbox was adopted twice")
	}

	// Not adopted: a sandbox that never was, and one started the usual
	// way (by a Runtime that forgot it).
	if _, err := r2.Adopt(ctx, uuid.NewString()); err == nil {
		t.Error("a sandbox that never was was adopted")
	}
	plain := spec
	plain.ID, plain.Reattach = uuid.NewString(), false
	r3 := runtimeAt(t, stateDir)
	inst3, err := r3.Start(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst3.Destroy(context.Background()) })
	abandon(r3, inst3.(*instance))
	if _, err := r3.Adopt(ctx, plain.ID); err == nil {
		t.Error("a sandbox started without Reattach was adopted")
	}
	// Its agent saw EOF: the usual sandbox ends with its daemon.
	testutil.Eventually(t, 30*time.Second, func() bool { return len(r3.sandboxProcesses(plain.ID)) == 0 },
		"the sandbox started without Reattach ending with its Runtime")
}

// dialAgent connects to inst's agent and waits for it to answer.
func dialAgent(ctx context.Context, t *testing.T, inst runtime.Instance) *agentclient.Client {
	t.Helper()
	c, err := agentclient.Dial(inst.Conn(), agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("the agent did not answer: %v\nstderr: %s", err, inst.StderrTail())
	}
	return c
}

// abandon does to r what a daemon's death does: its ends of inst's
// stream close and it forgets inst, the sandbox untouched.
func abandon(r *Runtime, inst *instance) {
	inst.conn.Close()
	inst.stderrR.Close()
	r.mu.Lock()
	delete(r.live, inst.id)
	r.mu.Unlock()
}
