package envd

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// streamed is what a process stream carried.
type streamed struct {
	pid            uint32
	stdout, stderr strings.Builder
	pty            strings.Builder
	end            *pb.ProcessEvent_EndEvent
}

// events is a process stream as its events.
type events interface {
	Receive() bool
	Err() error
	Close() error
}

// collect reads a process stream to its end; the first event must be
// start.
func collect(t *testing.T, st events, event func() *pb.ProcessEvent) *streamed {
	t.Helper()
	return read(t, st, event, 0)
}

// rest reads the rest of a process stream whose start event was taken.
func rest(t *testing.T, st events, event func() *pb.ProcessEvent) *streamed {
	t.Helper()
	return read(t, st, event, 1)
}

// read reads a process stream to its end, from its first'th event.
func read(t *testing.T, st events, event func() *pb.ProcessEvent, first int) *streamed {
	t.Helper()
	defer st.Close()
	out := &streamed{}
	for i := first; st.Receive(); i++ {
		switch ev := event().GetEvent().(type) {
		case *pb.ProcessEvent_Start:
			if i != 0 {
				t.Fatalf("start event at %d", i)
			}
			out.pid = ev.Start.GetPid()
		case *pb.ProcessEvent_Data:
			if i == 0 {
				t.Fatal("data before start")
			}
			out.stdout.Write(ev.Data.GetStdout())
			out.stderr.Write(ev.Data.GetStderr())
			out.pty.Write(ev.Data.GetPty())
		case *pb.ProcessEvent_End:
			out.end = ev.End
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return out
}

func shell(script string) *pb.ProcessConfig {
	return &pb.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", script}}
}

func TestStartStreamsOutputAndEnd(t *testing.T) {
	e := newEnv(t)
	for name, opts := range codecs {
		t.Run(name, func(t *testing.T) {
			no := false
			cfg := shell(`echo "out $GREETING"; pwd; echo err >&2; exit 3`)
			cfg.Envs = map[string]string{"GREETING": "hi"}
			cwd := t.TempDir()
			cfg.Cwd = &cwd
			st, err := e.process(opts).Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: cfg, Stdin: &no}))
			if err != nil {
				t.Fatal(err)
			}
			got := collect(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() })
			if got.pid == 0 || got.end == nil {
				t.Fatalf("pid %d end %v", got.pid, got.end)
			}
			if want := "out hi\n" + cwd + "\n"; got.stdout.String() != want || got.stderr.String() != "err\n" {
				t.Errorf("stdout %q stderr %q; want %q and err", got.stdout.String(), got.stderr.String(), want)
			}
			if got.end.GetExitCode() != 3 || !got.end.GetExited() || got.end.GetStatus() != "exit status 3" {
				t.Errorf("end %v; want exit status 3", got.end)
			}
		})
	}
}

func TestProcessOutlivesItsStreamAndReattaches(t *testing.T) {
	e := newEnv(t)
	pc := e.process(nil)
	tag := "worker"
	ctx, cancel := context.WithCancel(testCtx(t))
	st, err := pc.Start(ctx, connect.NewRequest(&pb.StartRequest{Process: shell(`read line; echo "got $line"`), Tag: &tag}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Receive() {
		t.Fatalf("no start event: %v", st.Err())
	}
	pid := st.Msg().GetEvent().GetStart().GetPid()
	cancel() // the client goes away; the process stays
	st.Close()

	list, err := pc.List(testCtx(t), connect.NewRequest(&pb.ListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range list.Msg.GetProcesses() {
		if p.GetPid() == pid {
			found = p.GetTag() == tag && p.GetConfig().GetCmd() == "/bin/sh"
		}
	}
	if !found {
		t.Fatalf("pid %d with tag %q not in %v", pid, tag, list.Msg.GetProcesses())
	}

	byTag := &pb.ProcessSelector{Selector: &pb.ProcessSelector_Tag{Tag: tag}}
	again, err := pc.Connect(testCtx(t), connect.NewRequest(&pb.ConnectRequest{Process: byTag}))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Receive() || again.Msg().GetEvent().GetStart().GetPid() != pid {
		t.Fatalf("connect's first event is not start{%d}: %v %v", pid, again.Msg(), again.Err())
	}
	byPid := &pb.ProcessSelector{Selector: &pb.ProcessSelector_Pid{Pid: pid}}
	input := &pb.ProcessInput{Input: &pb.ProcessInput_Stdin{Stdin: []byte("hello\n")}}
	if _, err := pc.SendInput(testCtx(t), connect.NewRequest(&pb.SendInputRequest{Process: byPid, Input: input})); err != nil {
		t.Fatal(err)
	}
	got := rest(t, again, func() *pb.ProcessEvent { return again.Msg().GetEvent() })
	if got.stdout.String() != "got hello\n" || got.end.GetExitCode() != 0 {
		t.Errorf("stdout %q end %v", got.stdout.String(), got.end)
	}
}

func TestSignalCloseStdinAndErrors(t *testing.T) {
	e := newEnv(t)
	pc := e.process(codecs["json"])
	start := func(script string) (uint32, *connect.ServerStreamForClient[pb.StartResponse]) {
		st, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: shell(script)}))
		if err != nil || !st.Receive() {
			t.Fatalf("start: %v %v", err, st.Err())
		}
		return st.Msg().GetEvent().GetStart().GetPid(), st
	}
	sel := func(pid uint32) *pb.ProcessSelector {
		return &pb.ProcessSelector{Selector: &pb.ProcessSelector_Pid{Pid: pid}}
	}

	pid, st := start("sleep 600")
	if _, err := pc.SendSignal(testCtx(t), connect.NewRequest(&pb.SendSignalRequest{Process: sel(pid), Signal: pb.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	got := rest(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() })
	if got.end.GetExited() || got.end.GetExitCode() != -1 || !strings.HasPrefix(got.end.GetStatus(), "signal: ") {
		t.Errorf("end of a killed process %v", got.end)
	}

	pid, st = start("cat; echo done")
	if _, err := pc.CloseStdin(testCtx(t), connect.NewRequest(&pb.CloseStdinRequest{Process: sel(pid)})); err != nil {
		t.Fatal(err)
	}
	if got := rest(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() }); got.stdout.String() != "done\n" {
		t.Errorf("stdout after closing stdin %q", got.stdout.String())
	}

	_, err := pc.SendSignal(testCtx(t), connect.NewRequest(&pb.SendSignalRequest{Process: sel(4000000), Signal: pb.Signal_SIGNAL_SIGTERM}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = pc.SendSignal(testCtx(t), connect.NewRequest(&pb.SendSignalRequest{Process: sel(pid), Signal: pb.Signal_SIGNAL_UNSPECIFIED}))
	wantCode(t, err, connect.CodeInvalidArgument)

	noSandbox := processconnectClient(e, "")
	_, err = noSandbox.List(testCtx(t), connect.NewRequest(&pb.ListRequest{}))
	wantCode(t, err, connect.CodeInvalidArgument)
	other := e.process(nil, "X-Owner", "mallory")
	_, err = other.List(testCtx(t), connect.NewRequest(&pb.ListRequest{}))
	wantCode(t, err, connect.CodeUnavailable)
}

func TestStartTimeoutKillsTheProcess(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(testCtx(t), 2e9)
	defer cancel()
	st, err := e.process(nil).Start(ctx, connect.NewRequest(&pb.StartRequest{Process: shell("sleep 600")}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	pid := int(st.Msg().GetEvent().GetStart().GetPid())
	for st.Receive() {
	}
	wantCode(t, st.Err(), connect.CodeDeadlineExceeded)
	owned := auth.WithOwner(testCtx(t), owner)
	testutil.Eventually(t, 30*time.Second, func() bool {
		info, err := e.procs.GetProcess(owned, api.ProcessRequest{SandboxID: e.sandbox, Pid: pid})
		return err == nil && info.State == api.ProcessExited
	}, "the process is killed")
}

func TestPtyResizeAndInput(t *testing.T) {
	e := newEnv(t)
	pc := e.process(nil)
	st, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{
		Process: shell("read go; stty size"),
		Pty:     &pb.PTY{Size: &pb.PTY_Size{Cols: 80, Rows: 24}},
	}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	pid := st.Msg().GetEvent().GetStart().GetPid()
	sel := &pb.ProcessSelector{Selector: &pb.ProcessSelector_Pid{Pid: pid}}
	if _, err := pc.Update(testCtx(t), connect.NewRequest(&pb.UpdateRequest{Process: sel, Pty: &pb.PTY{Size: &pb.PTY_Size{Cols: 100, Rows: 30}}})); err != nil {
		t.Fatal(err)
	}
	input := &pb.ProcessInput{Input: &pb.ProcessInput_Pty{Pty: []byte("go\n")}}
	if _, err := pc.SendInput(testCtx(t), connect.NewRequest(&pb.SendInputRequest{Process: sel, Input: input})); err != nil {
		t.Fatal(err)
	}
	got := rest(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() })
	if !strings.Contains(got.pty.String(), "30 100") || got.stdout.Len() != 0 {
		t.Errorf("pty output %q (stdout %q); want the new size 30 100", got.pty.String(), got.stdout.String())
	}
}

// processconnectClient is a process client whose requests name sandbox
// (none when "").
func processconnectClient(e *env, sandbox string) interface {
	List(context.Context, *connect.Request[pb.ListRequest]) (*connect.Response[pb.ListResponse], error)
} {
	c := e.client()
	c.Transport.(headers).set.Del(api.HeaderE2BSandboxID)
	if sandbox != "" {
		c.Transport.(headers).set.Set(api.HeaderE2BSandboxID, sandbox)
	}
	return processconnect.NewProcessClient(c, e.srv.URL)
}

func TestKeepalivesWhileQuiet(t *testing.T) {
	e := newEnv(t)
	pc := e.process(nil, "Keepalive-Ping-Interval", "1")
	st, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: shell("sleep 600")}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	pid := st.Msg().GetEvent().GetStart().GetPid()
	if !st.Receive() || st.Msg().GetEvent().GetKeepalive() == nil {
		t.Fatalf("a quiet process's next event is not a keepalive: %v %v", st.Msg(), st.Err())
	}
	sel := &pb.ProcessSelector{Selector: &pb.ProcessSelector_Pid{Pid: pid}}
	if _, err := pc.SendSignal(testCtx(t), connect.NewRequest(&pb.SendSignalRequest{Process: sel, Signal: pb.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	if got := rest(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() }); got.end == nil {
		t.Error("no end event")
	}
}

func TestStreamInput(t *testing.T) {
	e := newEnv(t)
	pc := e.process(nil)
	yes := true
	st, err := pc.Start(testCtx(t), connect.NewRequest(&pb.StartRequest{Process: shell("head -n 2"), Stdin: &yes}))
	if err != nil || !st.Receive() {
		t.Fatalf("start: %v %v", err, st.Err())
	}
	sel := &pb.ProcessSelector{Selector: &pb.ProcessSelector_Pid{Pid: st.Msg().GetEvent().GetStart().GetPid()}}
	in := pc.StreamInput(testCtx(t))
	msgs := []*pb.StreamInputRequest{
		{Event: &pb.StreamInputRequest_Start{Start: &pb.StreamInputRequest_StartEvent{Process: sel}}},
		{Event: &pb.StreamInputRequest_Data{Data: &pb.StreamInputRequest_DataEvent{Input: &pb.ProcessInput{Input: &pb.ProcessInput_Stdin{Stdin: []byte("one\n")}}}}},
		{Event: &pb.StreamInputRequest_Keepalive{Keepalive: &pb.StreamInputRequest_KeepAlive{}}},
		{Event: &pb.StreamInputRequest_Data{Data: &pb.StreamInputRequest_DataEvent{Input: &pb.ProcessInput{Input: &pb.ProcessInput_Stdin{Stdin: []byte("two\n")}}}}},
	}
	for _, m := range msgs {
		if err := in.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.CloseAndReceive(); err != nil {
		t.Fatal(err)
	}
	if got := rest(t, st, func() *pb.ProcessEvent { return st.Msg().GetEvent() }); got.stdout.String() != "one\ntwo\n" {
		t.Errorf("stdout %q", got.stdout.String())
	}
}
