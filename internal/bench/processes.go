package bench

// Process scenarios: how soon a line a process writes reaches a streamed
// exec's client, a PTY's echo round trip, how fast a streamed exec moves
// output (and what it costs the daemon's memory), and listing the
// processes of many sandboxes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

const (
	// lineGap spaces the lines of the stream latency scenario, so that
	// each is read on its own rather than in a batch.
	lineGap = 10 * time.Millisecond
	// listSandboxes and listProcesses shape the process list scenario.
	listSandboxes = 10
	listProcesses = 10
)

// streamLatency times lines from the moment a process writes them (its
// clock) to the moment the client of a streamed exec has them (the host's:
// gVisor's clock is the host's).
func streamLatency(ctx context.Context, e *env) (Result, error) {
	n := e.opts.Warmup + e.opts.Runs
	script := fmt.Sprintf("import sys, time\nfor _ in range(%d):\n    sys.stdout.write('%%d\\n' %% time.time_ns()); sys.stdout.flush(); time.sleep(%g)", n, lineGap.Seconds())
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		var pending []byte
		res, err := e.c.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", script},
			TimeoutMs: uint64(execTimeout.Milliseconds())}, func(event string, data json.RawMessage) error {
			if event != api.EventStdout {
				return nil
			}
			now := time.Now()
			var c api.OutputChunk
			if err := json.Unmarshal(data, &c); err != nil {
				return err
			}
			pending = append(pending, c.Data...)
			for {
				line, rest, ok := bytes.Cut(pending, []byte("\n"))
				if !ok {
					return nil
				}
				pending = rest
				ns, err := strconv.ParseInt(string(line), 10, 64)
				if err != nil {
					return fmt.Errorf("line %q is not a time", line)
				}
				samples = append(samples, now.Sub(time.Unix(0, ns)))
			}
		})
		if err != nil {
			return err
		}
		return checkExit("python3", res)
	})
	if err == nil && len(samples) != n {
		err = fmt.Errorf("got %d lines, want %d", len(samples), n)
	}
	if err != nil {
		return Result{}, err
	}
	res := latencyResult(samples[e.opts.Warmup:])
	res.Note = fmt.Sprintf("one streamed exec (HTTP event stream) printing a timestamped line every %v; each sample is the line's arrival less its timestamp", lineGap)
	return res, nil
}

// ptyEcho times the round trip of one byte through a terminal whose
// process is cat in raw mode: typed over the terminal WebSocket, read back
// from it.
func ptyEcho(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		t, err := e.c.Terminal(tctx, id, client.TerminalOptions{Cmd: []string{"sh", "-c", "stty raw -echo; echo ready; exec cat"}})
		if err != nil {
			return err
		}
		defer t.Close()
		if err := readUntil(t, "ready"); err != nil {
			return err
		}
		i := 0
		samples, err = e.repeat(ctx, func(context.Context) (time.Duration, error) {
			i++
			b := string(rune('a' + i%26))
			start := time.Now()
			if _, err := t.Write([]byte(b)); err != nil {
				return 0, err
			}
			if err := readUntil(t, b); err != nil {
				return 0, err
			}
			return time.Since(start), nil
		})
		return err
	})
	res := latencyResult(samples)
	res.Note = "one byte typed into `cat` on a raw PTY and read back, over GET /v1/sandboxes/{id}/pty"
	return res, err
}

// readUntil reads t until what arrives ends with want.
func readUntil(t *client.Terminal, want string) error {
	var seen []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(bytes.TrimRight(seen, "\r\n"), []byte(want)) {
		n, err := t.Read(buf)
		if err != nil {
			return fmt.Errorf("terminal: waiting for %q after %q: %w", want, seen, err)
		}
		seen = append(seen, buf[:n]...)
	}
	return nil
}

// streamThroughput times streamed execs of StreamBytes of text, written
// in 1 MiB pieces, and reads the daemon's resident memory around them.
func streamThroughput(ctx context.Context, e *env) (Result, error) {
	size := e.opts.StreamBytes
	script := fmt.Sprintf("import sys\nb = b'0123456789abcdef' * 65536\nn = %d\nwhile n > 0:\n    sys.stdout.buffer.write(b[:n]); n -= len(b)", size)
	var samples []time.Duration
	var growth int64
	err := e.withSandbox(ctx, func(id string) error {
		base, err := e.daemonRSS(ctx)
		if err != nil {
			return err
		}
		samples, err = e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
			var got int64
			start := time.Now()
			res, err := e.c.ExecStreamFramed(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", script},
				TimeoutMs: uint64(execTimeout.Milliseconds())}, func(ev client.FramedEvent) error {
				if ev.Type == api.EventStdout {
					got += int64(len(ev.Bytes))
				}
				return nil
			})
			d := time.Since(start)
			if err == nil {
				err = checkExit("python3", res)
			}
			if err == nil && got != size {
				err = fmt.Errorf("streamed %d bytes, want %d", got, size)
			}
			if rss, rerr := e.daemonRSS(ctx); rerr == nil {
				growth = max(growth, rss-base)
			}
			return d, err
		})
		return err
	})
	res := latencyResult(samples)
	if err == nil {
		res.Note = fmt.Sprintf("%s of text per streamed exec, written in 1 MiB pieces, read in the framed form (raw bytes after each event's line): %.0f MiB/s at p50; the daemon's resident memory grew by at most %.1f MiB",
			sizeText(size), float64(size)/(1<<20)/res.Latency.P50.Seconds(), float64(growth)/(1<<20))
	}
	return res, err
}

// daemonRSS reads the daemon's resident memory from its /metrics.
func (e *env) daemonRSS(ctx context.Context) (int64, error) {
	text, err := e.c.Prometheus(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the daemon's /metrics: %w", err)
	}
	v, ok := metricValue(text, "process_resident_memory_bytes")
	if !ok {
		return 0, errors.New("the daemon's /metrics has no process_resident_memory_bytes")
	}
	return int64(v), nil
}

// processList times listing every process of listSandboxes sandboxes that
// run listProcesses background processes each: the ten lists at once, as
// a dashboard would.
func processList(ctx context.Context, e *env) (Result, error) {
	ids, err := e.createSandboxes(ctx, listSandboxes, func(id string) error {
		for range listProcesses {
			if _, err := e.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "3600"}, Tag: sandboxName}); err != nil {
				return fmt.Errorf("starting a process: %w", err)
			}
		}
		return nil
	})
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		var wg sync.WaitGroup
		errs := make([]error, len(ids))
		start := time.Now()
		for i, id := range ids {
			wg.Go(func() {
				list, err := e.c.ListProcesses(ctx, id)
				if err == nil && countTagged(list) != listProcesses {
					err = fmt.Errorf("sandbox %s lists %d of its %d processes", id, countTagged(list), listProcesses)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		return time.Since(start), errors.Join(errs...)
	})
	res := latencyResult(samples)
	res.Note = fmt.Sprintf("sandbox::process::list of %d sandboxes at once, %d background processes each (%d in all)",
		listSandboxes, listProcesses, listSandboxes*listProcesses)
	return res, err
}

// countTagged counts the benchmark's processes in a list.
func countTagged(list api.ProcessListResponse) int {
	n := 0
	for _, p := range list.Processes {
		if p.Hutch && strings.EqualFold(p.Tag, sandboxName) {
			n++
		}
	}
	return n
}
