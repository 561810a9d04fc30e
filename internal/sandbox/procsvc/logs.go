package procsvc

import (
	"context"
	"encoding/base64"
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// logQueue bounds the lines followed processes have sent and the stream
// has not emitted yet; a full queue holds the processes' readers back
// (their output waits in the agent's rings).
const logQueue = 64

// logItem is one event of a logs stream.
type logItem struct {
	event string
	data  any
}

// StreamLogs emits the output of a sandbox's background processes as log
// lines tagged with their pid and tag, oldest process first
// (sandbox::process::logs). Without follow it ends with what the
// processes hold now; with follow an open event comes first, then what
// the processes hold now (oldest process first, as without follow), then
// each process's lines as they are written (processes interleaved as
// their output arrives), an exit event
// ends each process, and processes started later join, until the caller
// goes away or the sandbox stops (S004).
func (s *Service) StreamLogs(ctx context.Context, req api.LogsRequest, emit emitFunc) error {
	if len(req.Tag) > maxTagBytes {
		return errdefs.Malformed("tag is %d bytes, more than %d", len(req.Tag), maxTagBytes)
	}
	sb, release, err := s.sbs.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return err
	}
	defer release()
	if !req.Follow {
		procs, err := s.taggedProcesses(ctx, sb, req.Tag, nil)
		if err != nil {
			return err
		}
		for _, p := range procs {
			if _, err := s.logsNow(ctx, sb, p, emit); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan logItem, logQueue)
	done := make(chan struct{})
	defer close(done)
	// The first event answers at once: the caller is following.
	if err := emit(api.EventStreamOpen, struct{}{}); err != nil {
		return err
	}
	seen := map[int]bool{}
	for backlog := true; ; backlog = false {
		news := s.book(sb).news()
		procs, err := s.taggedProcesses(ctx, sb, req.Tag, seen)
		if err != nil {
			return err
		}
		for _, p := range procs {
			seen[p.Pid] = true
			// What the first processes hold goes out oldest process first,
			// as without follow; what they write next, as it comes.
			var from [2]int64
			if backlog {
				if from, err = s.logsNow(ctx, sb, p, emit); err != nil {
					return err
				}
			}
			go s.followLogs(ctx, sb, p, from, items, done)
		}
		for wait := true; wait; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-sb.Ended():
				return sb.NotRunning()
			case it := <-items:
				if err := emit(it.event, it.data); err != nil {
					return err
				}
			case <-news:
				wait = false
			}
		}
	}
}

// taggedProcesses lists the background processes of sb with tag (any
// when ""), by pid, leaving out the pids in skip.
func (s *Service) taggedProcesses(ctx context.Context, sb sandbox.Handle, tag string, skip map[int]bool) ([]api.ProcessInfo, error) {
	ps, err := sb.Agent().List(ctx)
	if err != nil {
		return nil, Fail(ctx, sb, "listing processes", 0, err)
	}
	b := s.book(sb)
	var out []api.ProcessInfo
	for _, p := range ps {
		info := b.describe(p)
		if (tag == "" || info.Tag == tag) && !skip[info.Pid] {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out, nil
}

// logsNow emits what process p holds now, from the oldest byte kept, and
// returns the offsets of stdout and stderr where it ended.
func (s *Service) logsNow(ctx context.Context, sb sandbox.Handle, p api.ProcessInfo, emit emitFunc) ([2]int64, error) {
	out, err := s.ProcessOutput(ctx, api.ProcessOutputRequest{SandboxID: sb.ID(), Pid: p.Pid})
	if err != nil {
		if errdefs.Is(err, errdefs.CodeProcessNotFound) {
			return [2]int64{}, nil // forgotten since the listing
		}
		return [2]int64{}, err
	}
	end := [2]int64{chunkEnd(out.Stdout), chunkEnd(out.Stderr)}
	for _, c := range []struct {
		stream string
		chunk  api.OutputChunk
	}{{api.EventStdout, out.Stdout}, {api.EventStderr, out.Stderr}} {
		if c.chunk.Data == "" && c.chunk.Dropped == 0 {
			continue
		}
		if err := emit(api.EventLog, api.LogLine{Pid: p.Pid, Tag: p.Tag, Stream: c.stream, OutputChunk: c.chunk}); err != nil {
			return end, err
		}
	}
	return end, nil
}

// chunkEnd is the offset of the byte after chunk c.
func chunkEnd(c api.OutputChunk) int64 {
	n := len(c.Data)
	if c.Base64 {
		n = base64.StdEncoding.DecodedLen(n) - strings.Count(c.Data[max(0, len(c.Data)-2):], "=")
	}
	return c.Offset + int64(n)
}

// followLogs sends process p's output from offsets from (stdout, stderr;
// older than kept starts at the oldest byte kept), then its exit, to
// items until ctx ends or done closes.
func (s *Service) followLogs(ctx context.Context, sb sandbox.Handle, p api.ProcessInfo, from [2]int64, items chan<- logItem, done <-chan struct{}) {
	send := func(it logItem) error {
		select {
		case items <- it:
			return nil
		case <-done:
			return context.Canceled
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	events, err := sb.Agent().Attach(ctx, &agentv1.AttachRequest{Pid: int32(p.Pid), StdoutOffset: from[0], StderrOffset: from[1]})
	if err != nil {
		return // the sandbox stopped, or the process was forgotten
	}
	defer events.Close()
	_, err = relay(events, func(event string, data any) error {
		c, ok := data.(api.OutputChunk)
		if !ok {
			return nil // the start event
		}
		return send(logItem{api.EventLog, api.LogLine{Pid: p.Pid, Tag: p.Tag, Stream: event, OutputChunk: c}})
	}, sb.Touch)
	if err != nil {
		return
	}
	if info, err := s.processInfo(ctx, sb, p.Pid); err == nil {
		_ = send(logItem{api.EventExit, info})
	}
}
