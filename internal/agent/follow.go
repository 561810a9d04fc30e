package agent

import (
	"context"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// reader is one stream of a process's events, following its rings. A
// reader with a capture cap (limit) sends each output stream's first limit
// bytes only, and none of them may be lost: until it has sent them, output
// that would push them out of the ring waits (heldBackLocked), which holds
// the process's writes back for as long as the stream's receiver takes.
type reader struct {
	// at is the next offset to send of each stream; guarded by proc.mu.
	at    [2]int64
	limit int64
	// buf holds the chunk being sent, reused for the next: a send has
	// marshaled the event when it returns (gRPC's Send encodes it before,
	// and the agent has no stats handler that would keep it), so each
	// MiB streamed is not a new allocation for the sandbox's GC.
	buf []byte
}

// heldBackLocked reports whether writing n bytes to stream s would push
// out bytes a capture reader has yet to send.
func (p *proc) heldBackLocked(s, n int) bool {
	r := &p.out[s]
	for rd := range p.pins {
		if rd.at[s] < rd.limit && r.end+int64(n)-int64(r.size) > rd.at[s] {
			return true
		}
	}
	return false
}

// follow sends p's output from the offsets from, then its exit, with send.
// With a limit it is a capture: see reader. It returns when the exit is
// sent, send fails or ctx ends.
func (p *proc) follow(ctx context.Context, from [2]int64, limit int64, send func(*agentv1.ProcessEvent) error) error {
	rd := &reader{at: from, limit: limit}
	if limit > 0 {
		p.mu.Lock()
		if p.pins == nil {
			p.pins = make(map[*reader]struct{})
		}
		p.pins[rd] = struct{}{}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.pins, rd)
			p.cond.Broadcast()
			p.mu.Unlock()
		}()
	}
	turn := stdout
	for {
		p.mu.Lock()
		ev, s := p.nextLocked(rd, turn)
		exited, changed := p.exited, p.changed
		if ev != nil && limit > 0 {
			p.cond.Broadcast()
		}
		p.mu.Unlock()
		if ev != nil {
			// Take turns, so neither stream starves the other.
			turn = 1 - s
			if err := send(&agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Output{Output: ev}}); err != nil {
				return err
			}
			continue
		}
		if exited != nil {
			e := proto.CloneOf(exited)
			e.StdoutTruncated = limit > 0 && e.StdoutEnd > limit
			e.StderrTruncated = limit > 0 && e.StderrEnd > limit
			return send(&agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Exited{Exited: e}})
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// nextLocked is the next chunk rd has to send and its stream, trying
// stream first first, or nil when rd is up to date.
func (p *proc) nextLocked(rd *reader, first int) (*agentv1.Output, int) {
	for _, s := range [2]int{first, 1 - first} {
		n := agentv1.OutputChunkBytes
		if rd.limit > 0 {
			n = int(min(int64(n), rd.limit-rd.at[s]))
		}
		if n <= 0 {
			continue
		}
		data, at := p.out[s].readInto(rd.buf, rd.at[s], n)
		if len(data) == 0 {
			continue
		}
		rd.buf = data
		out := &agentv1.Output{Stream: streamOf[s], Offset: at, Data: data, Dropped: at - rd.at[s]}
		rd.at[s] = at + int64(len(data))
		return out, s
	}
	return nil, 0
}
