package agentclient_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
)

func started(pid int32) *agentv1.ProcessEvent {
	return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Started{Started: &agentv1.Started{Pid: pid}}}
}

func output(s agentv1.Stream, off int64, data []byte, dropped int64) *agentv1.ProcessEvent {
	return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Output{Output: &agentv1.Output{Stream: s, Offset: off, Data: data, Dropped: dropped}}}
}

func exited(stdoutEnd int64) *agentv1.ProcessEvent {
	return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Exited{Exited: &agentv1.Exited{StdoutEnd: stdoutEnd}}}
}

// TestHostileEventsEndTheSession feeds the client process streams that
// the real agent never sends: each must end the session with a
// ProtocolError, not reach the caller as output.
func TestHostileEventsEndTheSession(t *testing.T) {
	out := agentv1.Stream_STREAM_STDOUT
	cases := []struct {
		name   string
		events []*agentv1.ProcessEvent
	}{
		{"no kind", []*agentv1.ProcessEvent{started(7), {}}},
		{"started twice", []*agentv1.ProcessEvent{started(7), started(7)}},
		{"bad pid", []*agentv1.ProcessEvent{started(-1)}},
		{"unknown stream", []*agentv1.ProcessEvent{started(7), output(9, 0, []byte("x"), 0)}},
		{"gap in offsets", []*agentv1.ProcessEvent{started(7), output(out, 5, []byte("x"), 0)}},
		{"offset back", []*agentv1.ProcessEvent{started(7), output(out, 0, []byte("xy"), 0), output(out, 1, []byte("x"), 0)}},
		{"negative drop", []*agentv1.ProcessEvent{started(7), output(out, 0, []byte("x"), -1)}},
		{"empty chunk", []*agentv1.ProcessEvent{started(7), output(out, 0, nil, 0)}},
		{"exit before its output", []*agentv1.ProcessEvent{started(7), output(out, 0, []byte("xy"), 0), exited(1)}},
		{"events after exit", []*agentv1.ProcessEvent{started(7), exited(0), output(out, 0, []byte("x"), 0)}},
		{"no exit", []*agentv1.ProcessEvent{started(7)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAgent{start: func(_ *agentv1.StartRequest, stream grpc.ServerStreamingServer[agentv1.ProcessEvent]) error {
				for _, ev := range tc.events {
					if err := stream.Send(ev); err != nil {
						return err
					}
				}
				return nil
			}}
			c := dialFake(t, f, agentclient.Options{})
			resp, err := c.Exec(context.Background(), &agentv1.ExecRequest{Argv: []string{"x"}})
			var pe *agentclient.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, %v; want a ProtocolError", resp, err)
			}
			if !errors.As(c.Err(), &pe) {
				t.Errorf("session: %v, want ended with the ProtocolError", c.Err())
			}
		})
	}
}

// TestAttachChecksPidAndOffsets attaches to a fake process: the stream
// must name the pid asked for and continue from the offsets asked for.
func TestAttachChecksPidAndOffsets(t *testing.T) {
	out := agentv1.Stream_STREAM_STDOUT
	cases := []struct {
		name   string
		events []*agentv1.ProcessEvent
		ok     bool
	}{
		{"from the offset", []*agentv1.ProcessEvent{started(7), output(out, 10, []byte("x"), 0), exited(11)}, true},
		{"with a drop", []*agentv1.ProcessEvent{started(7), output(out, 30, []byte("x"), 20), exited(31)}, true},
		{"another pid", []*agentv1.ProcessEvent{started(8)}, false},
		{"from zero", []*agentv1.ProcessEvent{started(7), output(out, 0, []byte("x"), 0)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &attachFake{events: tc.events}
			c := dialFake(t, f, agentclient.Options{})
			ev, err := c.Attach(context.Background(), &agentv1.AttachRequest{Pid: 7, StdoutOffset: 10})
			if err != nil {
				t.Fatal(err)
			}
			defer ev.Close()
			var got bytes.Buffer
			for err == nil {
				var e *agentv1.ProcessEvent
				if e, err = ev.Recv(); err == nil {
					got.Write(e.GetOutput().GetData())
				}
			}
			var pe *agentclient.ProtocolError
			if tc.ok != !errors.As(err, &pe) {
				t.Errorf("got %v (output %q), want ok=%v", err, got.String(), tc.ok)
			}
		})
	}
}

// attachFake answers Attach with fixed events.
type attachFake struct {
	fakeAgent
	events []*agentv1.ProcessEvent
}

func (f *attachFake) Attach(_ *agentv1.AttachRequest, stream grpc.ServerStreamingServer[agentv1.ProcessEvent]) error {
	for _, ev := range f.events {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}
