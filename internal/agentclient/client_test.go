package agentclient_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
)

// promptly bounds a call that must end on its own (a dead session, a
// deadline) rather than hang: far above what a busy machine adds, far
// below the sleeps and deadlines the tests would otherwise wait for.
const promptly = 30 * time.Second

// returnsPromptly fails t when f hangs past promptly, and returns f's
// error. How fast it returns is the benchmark's question, not a test's.
func returnsPromptly(t *testing.T, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if took := time.Since(start); took > promptly {
		t.Errorf("took %v, want it to return on its own well before %v", took, promptly)
	}
	return err
}

func TestDoneWhenStreamCloses(t *testing.T) {
	a := agenttest.Start(t, agent.Options{}, agentclient.Options{})
	select {
	case <-a.Client.Done():
		t.Fatal("Done closed on a live session")
	default:
	}
	a.Guest.Close() // what the sandbox exiting looks like
	select {
	case <-a.Client.Done():
	case <-time.After(promptly):
		t.Fatal("Done not closed after the stream closed")
	}
	err := returnsPromptly(t, func() error {
		_, err := a.Client.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"true"}})
		return err
	})
	if !errors.Is(err, agentclient.ErrClosed) {
		t.Errorf("exec on a dead session: %v, want ErrClosed", err)
	}
}

func TestCallAfterCloseFailsFast(t *testing.T) {
	c := agenttest.Start(t, agent.Options{}, agentclient.Options{}).Client
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	<-c.Done()
	calls := []struct {
		name string
		call func() error
	}{
		{"exec", func() error {
			_, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"true"}})
			return err
		}},
		{"info", func() error { _, err := c.Info(context.Background()); return err }},
		{"wait ready", func() error { return c.WaitReady(context.Background()) }},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			if err := returnsPromptly(t, tc.call); !errors.Is(err, agentclient.ErrClosed) {
				t.Errorf("got %v, want ErrClosed", err)
			}
		})
	}
}

func TestExecFailsWhenSessionDies(t *testing.T) {
	a := agenttest.Start(t, agent.Options{}, agentclient.Options{})
	time.AfterFunc(100*time.Millisecond, func() { a.Guest.Close() })
	err := returnsPromptly(t, func() error {
		_, err := a.Client.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"sleep", "300"}})
		return err
	})
	if !errors.Is(err, agentclient.ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
}

func TestWaitReady(t *testing.T) {
	const late = 300 * time.Millisecond
	cases := []struct {
		name string
		// agent does what the guest side does with its end of the stream.
		agent   func(t *testing.T, guest *agenttest.Conn)
		timeout time.Duration
		check   func(t *testing.T, err error, took time.Duration)
	}{
		{
			name: "agent starts late",
			agent: func(t *testing.T, guest *agenttest.Conn) {
				srv, err := agent.New(agent.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				t.Cleanup(func() { cancel(); <-done })
				time.AfterFunc(late, func() {
					defer close(done)
					_ = srv.Serve(ctx, guest)
				})
			},
			timeout: 2 * promptly,
			check: func(t *testing.T, err error, took time.Duration) {
				if err != nil {
					t.Fatal(err)
				}
				// Ready once the agent serves (how soon after is the
				// benchmark's create latency), never before.
				if took < late {
					t.Errorf("ready after %v, agent started after %v", took, late)
				}
				t.Logf("ready %v after the agent started", took-late)
			},
		},
		{
			name:    "no agent",
			agent:   func(*testing.T, *agenttest.Conn) {},
			timeout: 200 * time.Millisecond,
			check: func(t *testing.T, err error, took time.Duration) {
				wantNoAnswer(t, err)
				if took > promptly {
					t.Errorf("returned after %v, ctx ended after 200ms", took)
				}
			},
		},
		{
			name: "sandbox dies while booting",
			agent: func(_ *testing.T, guest *agenttest.Conn) {
				time.AfterFunc(100*time.Millisecond, func() { guest.Close() })
			},
			timeout: 2 * promptly,
			check: func(t *testing.T, err error, took time.Duration) {
				if !errors.Is(err, agentclient.ErrClosed) {
					t.Errorf("got %v, want ErrClosed", err)
				}
				if took > promptly {
					t.Errorf("returned after %v, stream closed after 100ms", took)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, guest := agenttest.Pipe(t)
			start := time.Now()
			c, err := agentclient.Dial(host, agentclient.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			tc.agent(t, guest)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			err = c.WaitReady(ctx)
			tc.check(t, err, time.Since(start))
		})
	}
}

// fakeAgent is an Agent service that misbehaves in ways the real agent
// cannot be made to: it stands for a sandbox whose PID 1 was replaced.
// exec answers a Start as the old unary exec did; start, when set, is
// the whole Start.
type fakeAgent struct {
	agentv1.UnimplementedAgentServer
	exec  func(context.Context, *agentv1.ExecRequest) (*agentv1.ExecResponse, error)
	start func(*agentv1.StartRequest, grpc.ServerStreamingServer[agentv1.ProcessEvent]) error
	// whole sends each output in one chunk, however large.
	whole bool
}

func (f *fakeAgent) Info(context.Context, *agentv1.InfoRequest) (*agentv1.InfoResponse, error) {
	return &agentv1.InfoResponse{Version: "fake"}, nil
}

func (f *fakeAgent) Start(req *agentv1.StartRequest, stream grpc.ServerStreamingServer[agentv1.ProcessEvent]) error {
	if f.start != nil {
		return f.start(req, stream)
	}
	resp, err := f.exec(stream.Context(), req.GetExec())
	if err != nil {
		return err
	}
	evs := []*agentv1.ProcessEvent{{Event: &agentv1.ProcessEvent_Started{Started: &agentv1.Started{Pid: 7}}}}
	for _, o := range []*agentv1.Output{
		{Stream: agentv1.Stream_STREAM_STDOUT, Data: resp.Stdout},
		{Stream: agentv1.Stream_STREAM_STDERR, Data: resp.Stderr},
	} {
		for len(o.Data) > 0 {
			n := len(o.Data)
			if !f.whole {
				n = min(n, agentv1.OutputChunkBytes)
			}
			evs = append(evs, &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Output{Output: &agentv1.Output{Stream: o.Stream, Offset: o.Offset, Data: o.Data[:n]}}})
			o.Offset += int64(n)
			o.Data = o.Data[n:]
		}
	}
	evs = append(evs, &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Exited{Exited: &agentv1.Exited{
		ExitCode: resp.ExitCode, OomKilled: resp.OomKilled, StdoutEnd: int64(len(resp.Stdout)), StderrEnd: int64(len(resp.Stderr)),
	}}})
	for _, ev := range evs {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

// dialFake serves f over a yamux session on a pipe and dials it.
func dialFake(t *testing.T, f agentv1.AgentServer, opts agentclient.Options) *agentclient.Client {
	t.Helper()
	host, guest := agenttest.Pipe(t)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	sess, err := yamux.Server(guest, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	agentv1.RegisterAgentServer(gs, f)
	go func() { _ = gs.Serve(sess) }()
	c, err := agentclient.Dial(host, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		gs.Stop()
		sess.Close()
	})
	return c
}

func TestExecHasADeadline(t *testing.T) {
	f := &fakeAgent{exec: func(ctx context.Context, _ *agentv1.ExecRequest) (*agentv1.ExecResponse, error) {
		<-ctx.Done() // never answers
		return nil, ctx.Err()
	}}
	cases := []struct {
		name string
		opts agentclient.Options
		req  *agentv1.ExecRequest
	}{
		{"timeout plus grace", agentclient.Options{ExecGrace: 100 * time.Millisecond},
			&agentv1.ExecRequest{Argv: []string{"x"}, TimeoutMs: 100}},
		{"no timeout", agentclient.Options{MaxExecDuration: 200 * time.Millisecond},
			&agentv1.ExecRequest{Argv: []string{"x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFake(t, f, tc.opts)
			err := returnsPromptly(t, func() error {
				_, err := c.Exec(context.Background(), tc.req)
				return err
			})
			wantNoAnswer(t, err)
		})
	}
}

// wantNoAnswer fails t unless err says the agent did not answer in time,
// in words rather than as gRPC's DeadlineExceeded status.
func wantNoAnswer(t *testing.T, err error) {
	t.Helper()
	var na *agentclient.NoAnswerError
	if !errors.As(err, &na) {
		t.Fatalf("got %v, want a NoAnswerError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "the agent did not answer within ") || strings.Contains(msg, "rpc error") {
		t.Errorf("message %q, want \"the agent did not answer within …\"", msg)
	}
}

// TestStreamOpenedBySandboxEndsSession stands for code in a sandbox that
// writes its own yamux frames into the agent's stream, each opening a
// stream toward the daemon and filling its window: the client must end the
// session with a protocol error, and keep a bounded part of the flood.
func TestStreamOpenedBySandboxEndsSession(t *testing.T) {
	const (
		streams = 256
		window  = 256 << 10 // yamux's initial stream window
		// limit is what the session may hold (agentv1.AcceptBacklog
		// windows and one grown window), plus room for the test's own
		// garbage; the flood is 64 MiB.
		limit = agentv1.AcceptBacklog*window + agentv1.StreamWindowBytes + 8<<20
	)
	host, guest := agenttest.Pipe(t)
	before := heapInUse()
	c, err := agentclient.Dial(host, agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	flooded := make(chan int64, 1)
	go func() { flooded <- openStreams(guest, streams, window) }()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session of a sandbox that opens streams did not end")
	}
	var pe *agentclient.ProtocolError
	if err := c.Err(); !errors.As(err, &pe) || !errors.Is(err, agentclient.ErrClosed) {
		t.Errorf("session ended with %v, want a ProtocolError", err)
	}
	if _, err := c.Info(context.Background()); !errors.As(err, &pe) {
		t.Errorf("call after the violation: %v, want the ProtocolError", err)
	}
	t.Logf("the guest wrote %d bytes before the host hung up", <-flooded)
	if held := heapInUse() - before; held > limit {
		t.Errorf("the client holds %d MiB after the flood, want at most %d MiB", held>>20, limit>>20)
	}
	runtime.KeepAlive(c)
}

// openStreams writes n yamux frames to w, each opening a stream from the
// agent's side (even ids) with size bytes of data, as code in a sandbox
// can through /proc/1/fd; it returns the bytes written before w failed.
func openStreams(w io.Writer, n, size int) int64 {
	frame := make([]byte, 12+size)
	// version 0, type 0 (data), flags SYN, stream id, length: big endian.
	binary.BigEndian.PutUint16(frame[2:4], 1)
	binary.BigEndian.PutUint32(frame[8:12], uint32(size))
	var written int64
	for i := range n {
		binary.BigEndian.PutUint32(frame[4:8], uint32(2*(i+1)))
		k, err := w.Write(frame)
		written += int64(k)
		if err != nil {
			break
		}
	}
	return written
}

// heapInUse is the bytes of live objects after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func TestExecBoundsOutput(t *testing.T) {
	const limit = 1024
	var asked atomic.Int64
	answer := func(n int) *fakeAgent {
		return &fakeAgent{exec: func(_ context.Context, req *agentv1.ExecRequest) (*agentv1.ExecResponse, error) {
			asked.Store(req.GetMaxOutputBytes())
			return &agentv1.ExecResponse{Exited: true, Stdout: bytes.Repeat([]byte("o"), n), Stderr: []byte("e")}, nil
		}}
	}
	cases := []struct {
		name      string
		requested int64
		sends     int
		wantAsked int64
		wantLen   int
		wantTrunc bool
		wantCode  codes.Code
	}{
		{"agent default is lowered", 0, 10, limit, 10, false, codes.OK},
		{"smaller cap is kept", 100, 10, 100, 10, false, codes.OK},
		{"larger cap is lowered", 1 << 30, 10, limit, 10, false, codes.OK},
		{"overlong answer is cut", 0, 4 * limit, limit, limit, true, codes.OK},
		{"overlong chunks are cut", 0, 3 << 20, limit, limit, true, codes.OK},
		{"huge chunk is refused", 0, 3 << 20, limit, 0, false, codes.ResourceExhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := answer(tc.sends)
			f.whole = tc.wantCode != codes.OK
			c := dialFake(t, f, agentclient.Options{MaxOutputBytes: limit})
			req := &agentv1.ExecRequest{Argv: []string{"x"}, MaxOutputBytes: tc.requested}
			resp, err := c.Exec(context.Background(), req)
			if req.MaxOutputBytes != tc.requested {
				t.Errorf("caller's request modified: max_output_bytes %d", req.MaxOutputBytes)
			}
			if got := asked.Load(); got != tc.wantAsked {
				t.Errorf("agent asked for %d bytes, want %d", got, tc.wantAsked)
			}
			if tc.wantCode != codes.OK {
				if status.Code(err) != tc.wantCode {
					t.Errorf("got %v, want %v", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Stdout) != tc.wantLen || resp.StdoutTruncated != tc.wantTrunc || string(resp.Stderr) != "e" {
				t.Errorf("stdout %d bytes truncated=%v stderr %q, want %d %v \"e\"",
					len(resp.Stdout), resp.StdoutTruncated, resp.Stderr, tc.wantLen, tc.wantTrunc)
			}
		})
	}
}

// TestExecReportsOOMKill: an exit the OOM killer caused says so.
func TestExecReportsOOMKill(t *testing.T) {
	for _, oom := range []bool{false, true} {
		f := &fakeAgent{exec: func(context.Context, *agentv1.ExecRequest) (*agentv1.ExecResponse, error) {
			return &agentv1.ExecResponse{Exited: true, ExitCode: 137, OomKilled: oom}, nil
		}}
		resp, err := dialFake(t, f, agentclient.Options{}).Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"x"}})
		if err != nil || !resp.Exited || resp.ExitCode != 137 || resp.OomKilled != oom {
			t.Errorf("Exec = %v, %v; want exit 137, oom_killed %v", resp, err, oom)
		}
	}
}

// BenchmarkExecTrue measures one exec of /bin/true through the whole stack:
// client, gRPC, yamux, a pipe pair, the agent, fork+exec and wait.
func BenchmarkExecTrue(b *testing.B) {
	c := agenttest.Start(b, agent.Options{}, agentclient.Options{}).Client
	req := &agentv1.ExecRequest{Argv: []string{"/bin/true"}, TimeoutMs: 10_000}
	ctx := context.Background()
	var spawn, run int64
	for b.Loop() {
		resp, err := c.Exec(ctx, req)
		if err != nil || resp.ExitCode != 0 {
			b.Fatal(resp, err)
		}
		spawn += resp.SpawnUs
		run += resp.DurationUs
	}
	b.ReportMetric(float64(spawn)/float64(b.N), "spawn-us/op")
	b.ReportMetric(float64(run)/float64(b.N), "run-us/op")
}

// BenchmarkInfo measures the RPC round trip alone.
func BenchmarkInfo(b *testing.B) {
	c := agenttest.Start(b, agent.Options{}, agentclient.Options{}).Client
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Info(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
