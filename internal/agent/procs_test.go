package agent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// hang bounds a wait for something that must happen on its own.
const hang = 30 * time.Second

// start starts req's process and returns its events and pid.
func start(t *testing.T, c *agentclient.Client, req *agentv1.StartRequest) (*agentclient.Events, int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	ev, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ev.Close)
	first, err := ev.Recv()
	if err != nil || first.GetStarted() == nil {
		t.Fatalf("first event %v, %v; want started", first, err)
	}
	return ev, first.GetStarted().GetPid()
}

// collected is what a stream delivered.
type collected struct {
	out     [2]bytes.Buffer
	first   [2]*agentv1.Output
	exited  *agentv1.Exited
	started bool
}

// collect reads ev to its end, or until stdout contains until (when set).
func collect(t *testing.T, ev *agentclient.Events, until string) *collected {
	t.Helper()
	var got collected
	for {
		e, err := ev.Recv()
		if errors.Is(err, io.EOF) {
			return &got
		}
		if err != nil {
			t.Fatalf("after %q/%q: %v", got.out[0].String(), got.out[1].String(), err)
		}
		switch {
		case e.GetStarted() != nil:
			got.started = true
		case e.GetOutput() != nil:
			s := int(e.GetOutput().GetStream()) - 1
			if got.first[s] == nil {
				got.first[s] = e.GetOutput()
			}
			got.out[s].Write(e.GetOutput().GetData())
			if until != "" && strings.Contains(got.out[0].String(), until) {
				return &got
			}
		case e.GetExited() != nil:
			got.exited = e.GetExited()
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

// TestProcessOutlivesItsStart starts a detached process with an open
// stdin, ends the starting stream, and finds the process still running:
// listed, fed through WriteStdin and CloseStdin, waited for, and its
// whole output re-read by Attach after it exited.
func TestProcessOutlivesItsStart(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	ev, pid := start(t, c, &agentv1.StartRequest{
		Exec:      &agentv1.ExecRequest{Argv: []string{"sh", "-c", "echo ready; cat; echo done >&2"}},
		OpenStdin: true,
	})
	collect(t, ev, "ready\n")
	ev.Close() // detach

	list, err := c.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].GetPid() != pid || list[0].GetState() != agentv1.ProcessState_PROCESS_STATE_RUNNING {
		t.Fatalf("list = %v, want process %d running", list, pid)
	}
	if err := c.WriteStdin(ctxT(t), pid, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseStdin(ctxT(t), pid); err != nil {
		t.Fatal(err)
	}
	exit, err := c.Wait(ctxT(t), pid)
	if err != nil || exit.GetExitCode() != 0 {
		t.Fatalf("wait: %v, %v", exit, err)
	}

	at, err := c.Attach(ctxT(t), &agentv1.AttachRequest{Pid: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	got := collect(t, at, "")
	if !got.started || got.out[0].String() != "ready\nhello\n" || got.out[1].String() != "done\n" || got.exited == nil {
		t.Errorf("attach after exit: started=%v stdout %q stderr %q exited %v", got.started, got.out[0].String(), got.out[1].String(), got.exited)
	}
	list, err = c.List(ctxT(t))
	if err != nil || len(list) != 1 || list[0].GetState() != agentv1.ProcessState_PROCESS_STATE_EXITED {
		t.Errorf("list after exit = %v, %v; want it remembered as exited", list, err)
	}
}

// TestAttachFromOffset re-attaches from where an earlier stream left off.
func TestAttachFromOffset(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	_, pid := start(t, c, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"printf", "0123456789"}}})
	if _, err := c.Wait(ctxT(t), pid); err != nil {
		t.Fatal(err)
	}
	at, err := c.Attach(ctxT(t), &agentv1.AttachRequest{Pid: pid, StdoutOffset: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	got := collect(t, at, "")
	if got.out[0].String() != "456789" || got.first[0].GetOffset() != 4 || got.first[0].GetDropped() != 0 {
		t.Errorf("from offset 4: %q, first chunk %v", got.out[0].String(), got.first[0])
	}

	if err := attachErr(t, c, &agentv1.AttachRequest{Pid: pid, StdoutOffset: 11}); status.Code(err) != codes.OutOfRange {
		t.Errorf("attach past the end: %v, want OutOfRange", err)
	}
	if err := attachErr(t, c, &agentv1.AttachRequest{Pid: 1 << 30}); status.Code(err) != codes.NotFound {
		t.Errorf("attach to an unknown pid: %v, want NotFound", err)
	}
}

// attachErr attaches with req and returns the error of its first event.
func attachErr(t *testing.T, c *agentclient.Client, req *agentv1.AttachRequest) error {
	at, err := c.Attach(ctxT(t), req)
	if err != nil {
		return err
	}
	defer at.Close()
	_, err = at.Recv()
	return err
}

// TestRingOverflowSaysWhatWasDropped overflows a small ring and attaches
// from the start: the stream begins at the ring's oldest byte and says
// how many bytes it lost.
func TestRingOverflowSaysWhatWasDropped(t *testing.T) {
	const written = 200_000
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	_, pid := start(t, c, &agentv1.StartRequest{
		Exec:      &agentv1.ExecRequest{Argv: []string{"head", "-c", "200000", "/dev/zero"}},
		RingBytes: agentv1.MinRingBytes,
	})
	if _, err := c.Wait(ctxT(t), pid); err != nil {
		t.Fatal(err)
	}
	at, err := c.Attach(ctxT(t), &agentv1.AttachRequest{Pid: pid})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	got := collect(t, at, "")
	lost := int64(written - agentv1.MinRingBytes)
	if f := got.first[0]; f == nil || f.GetDropped() != lost || f.GetOffset() != lost || got.out[0].Len() != agentv1.MinRingBytes {
		t.Errorf("first chunk %v (data left out), %d bytes; want %d dropped and %d bytes", f.GetOffset(), got.out[0].Len(), lost, agentv1.MinRingBytes)
	}
	if got.exited.GetStdoutEnd() != written {
		t.Errorf("stdout_end = %d, want %d", got.exited.GetStdoutEnd(), written)
	}
}

// TestCaptureStopsSending checks that a Start with a capture cap sends no
// more than the cap of a stream, whatever the process writes, and flags it.
func TestCaptureStopsSending(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	ev, _ := start(t, c, &agentv1.StartRequest{
		Exec: &agentv1.ExecRequest{Argv: []string{"head", "-c", "5000000", "/dev/zero"}, MaxOutputBytes: 1000},
		Tied: true,
	})
	got := collect(t, ev, "")
	if got.out[0].Len() != 1000 || !got.exited.GetStdoutTruncated() || got.exited.GetStderrTruncated() || got.exited.GetStdoutEnd() != 5_000_000 {
		t.Errorf("sent %d bytes, exited %v; want 1000 and stdout truncated", got.out[0].Len(), got.exited)
	}
}

// TestSignal signals a detached process's group.
func TestSignal(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	marker := uniqueSleep()
	t.Cleanup(func() { killMarked(marker) })
	_, pid := start(t, c, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sh", "-c", "sleep " + marker + "; exit 3"}}})
	if err := c.Signal(ctxT(t), pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exit, err := c.Wait(ctxT(t), pid)
	if err != nil || exit.GetExitCode() != 143 || exit.GetSignal() != int32(syscall.SIGTERM) {
		t.Fatalf("wait: %v, %v; want killed by SIGTERM (143)", exit, err)
	}
	waitGone(t, marker)
	if err := c.Signal(ctxT(t), pid, syscall.SIGTERM); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("signal after exit: %v, want FailedPrecondition", err)
	}
}

// TestTiedProcessDiesWithItsStream ends a tied process's stream early.
func TestTiedProcessDiesWithItsStream(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	marker := uniqueSleep()
	ev, _ := start(t, c, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sh", "-c", "sleep " + marker}}, Tied: true})
	ev.Close()
	waitGone(t, marker)
}

// TestPtyResize runs a shell on a PTY and checks that the size it sees
// follows Resize, and that its input is the PTY.
func TestPtyResize(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	ev, pid := start(t, c, &agentv1.StartRequest{
		Exec: &agentv1.ExecRequest{Argv: []string{"sh", "-c", "stty size; read x; stty size; tty"}},
		Pty:  &agentv1.PtySize{Rows: 24, Cols: 80},
		Tied: true,
	})
	collect(t, ev, "24 80")
	if err := c.Resize(ctxT(t), pid, 50, 132); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteStdin(ctxT(t), pid, []byte("\n")); err != nil {
		t.Fatal(err)
	}
	got := collect(t, ev, "")
	if out := got.out[0].String(); !strings.Contains(out, "50 132") || !strings.Contains(out, "/dev/pts/") || got.out[1].Len() != 0 {
		t.Errorf("after resize: stdout %q stderr %q; want \"50 132\" and a /dev/pts tty", out, got.out[1].String())
	}
	if got.exited.GetExitCode() != 0 {
		t.Errorf("exit %v", got.exited)
	}
}

// TestProcessCallErrors checks the errors of calls on processes that
// cannot take them.
func TestProcessCallErrors(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	marker := uniqueSleep()
	t.Cleanup(func() { killMarked(marker) })
	_, pid := start(t, c, &agentv1.StartRequest{Exec: &agentv1.ExecRequest{Argv: []string{"sleep", marker}}, Tied: true})
	cases := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"write without open stdin", func() error { return c.WriteStdin(ctxT(t), pid, []byte("x")) }, codes.FailedPrecondition},
		{"close without open stdin", func() error { return c.CloseStdin(ctxT(t), pid) }, codes.FailedPrecondition},
		{"resize without pty", func() error { return c.Resize(ctxT(t), pid, 1, 1) }, codes.FailedPrecondition},
		{"bad signal", func() error { return c.Signal(ctxT(t), pid, 0) }, codes.InvalidArgument},
		{"unknown pid", func() error { _, err := c.Wait(ctxT(t), 1<<30); return err }, codes.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.want {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestLosslessHoldsTheWriterBack reads a lossless stream only once the
// process has filled its small ring: every byte still arrives, none is
// dropped, because the writer waited for the reader. It writes more than
// the transport's windows hold (HTTP/2 and yamux), so that the process
// cannot finish, and leave the table, before the stream is read.
func TestLosslessHoldsTheWriterBack(t *testing.T) {
	const written = 64 << 20
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	ev, pid := start(t, c, &agentv1.StartRequest{
		Exec:      &agentv1.ExecRequest{Argv: []string{"head", "-c", strconv.Itoa(written), "/dev/zero"}},
		RingBytes: agentv1.MinRingBytes,
		Tied:      true,
		Lossless:  true,
	})
	testutil.EventuallyNil(t, hang, func() error {
		procs, err := c.List(ctxT(t))
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(procs, func(p *agentv1.ProcessInfo) bool { return p.GetPid() == pid }); i < 0 || procs[i].GetStdoutEnd() < agentv1.MinRingBytes/2 {
			return errors.New("ring not half full yet")
		}
		return nil
	}, "the process writes")
	got := collect(t, ev, "")
	if got.out[0].Len() != written || got.first[0].GetDropped() != 0 || got.exited.GetStdoutTruncated() {
		t.Fatalf("received %d of %d bytes (first chunk dropped %d), exited %v", got.out[0].Len(), written, got.first[0].GetDropped(), got.exited)
	}
}
