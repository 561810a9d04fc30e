package runtimetest

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// start starts an instance of r and connects a ready client to it.
func start(t *testing.T, r *Runtime, id string, copts agentclient.Options) (*Instance, *agentclient.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ri, err := r.Start(ctx, runtime.Spec{ID: id, CPUs: 2, MemoryMB: 512})
	if err != nil {
		t.Fatal(err)
	}
	c, err := agentclient.Dial(ri.Conn(), copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return ri.(*Instance), c
}

// waitClosed fails t unless ch closes within a generous bound.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen within 30 s", what)
	}
}

func TestExecThenDestroy(t *testing.T) {
	r := New(t)
	inst, c := start(t, r, "a", agentclient.Options{})
	resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"echo", "hi"}, TimeoutMs: 10_000})
	if err != nil || string(resp.Stdout) != "hi\n" {
		t.Fatalf("exec = %v, %v", resp, err)
	}
	if r.Running() != 1 || r.Instance("a") != inst {
		t.Fatalf("Running = %d, Instance = %v", r.Running(), r.Instance("a"))
	}
	for range 2 { // idempotent
		if err := inst.Destroy(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitClosed(t, inst.Done(), "the instance's end")
	waitClosed(t, c.Done(), "the session's end")
	if e := inst.Exit(); e.Ended() || !inst.Destroyed() || r.Running() != 0 {
		t.Errorf("after Destroy: Exit = %+v, Destroyed = %v, Running = %d", e, inst.Destroyed(), r.Running())
	}
}

func TestDestroyKillsTheCallsProcesses(t *testing.T) {
	r := New(t)
	inst, c := start(t, r, "a", agentclient.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"sleep", "600"}})
		errc <- err
	}()
	// Destroy while the exec may or may not have started: either way the
	// call must end.
	if err := inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("an exec outlived its instance's Destroy")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an exec still runs 30 s after its instance was destroyed")
	}
}

func TestDie(t *testing.T) {
	r := New(t)
	inst, c := start(t, r, "a", agentclient.Options{})
	want := runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory (limit 512 MiB)"}
	inst.Die(want)
	waitClosed(t, inst.Done(), "the instance's end")
	waitClosed(t, c.Done(), "the session's end")
	if got := inst.Exit(); got != want {
		t.Errorf("Exit = %+v, want %+v", got, want)
	}
	if !errors.Is(c.Err(), agentclient.ErrClosed) {
		t.Errorf("client error = %v, want ErrClosed", c.Err())
	}
}

func TestFreeze(t *testing.T) {
	r := New(t)
	inst, c := start(t, r, "a", agentclient.Options{CallTimeout: 300 * time.Millisecond})
	inst.Freeze()
	_, err := c.Info(context.Background())
	var na *agentclient.NoAnswerError
	if !errors.As(err, &na) {
		t.Fatalf("Info of a frozen agent = %v, want a NoAnswerError", err)
	}
	if inst.Ended() {
		t.Error("a frozen instance ended by itself")
	}
	if err := inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, inst.Done(), "the frozen instance's end")
}

func TestResize(t *testing.T) {
	r := New(t)
	inst, _ := start(t, r, "a", agentclient.Options{})
	if err := inst.Resize(1, 0); err != nil {
		t.Fatal(err)
	}
	if cpus, mem := inst.Limits(); cpus != 1 || mem != 512 {
		t.Errorf("Limits = %d, %d; want 1, 512", cpus, mem)
	}
}

func TestBeforeStartFailsStart(t *testing.T) {
	r := New(t)
	boom := errors.New("boom")
	r.BeforeStart(func(context.Context, runtime.Spec) error { return boom })
	if _, err := r.Start(context.Background(), runtime.Spec{ID: "a"}); !errors.Is(err, boom) {
		t.Fatalf("Start = %v, want boom", err)
	}
	if r.Instance("a") != nil {
		t.Error("a failed Start left an instance")
	}
}

func TestDestroyKillsDetachedProcesses(t *testing.T) {
	r := New(t)
	inst, c := start(t, r, "a", agentclient.Options{})
	ev, err := c.Start(context.Background(), &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sleep", "600"}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := ev.Recv()
	if err != nil || first.GetStarted() == nil {
		t.Fatalf("first event = %v, %v; want started", first, err)
	}
	pid := int(ev.Pid())
	ev.Close() // detach: the process runs on
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the detached process %d is gone before Destroy: %v", pid, err)
	}
	if err := inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the detached process %d ends with its instance", pid)
}
