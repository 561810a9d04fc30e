package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// outputPrinter writes a process's output events to the CLI's stdout and
// stderr as they come, keeping the streams apart. The bytes are the
// child's own, written as they are (as `docker exec` does); a gap the
// daemon's ring buffer dropped is told on stderr.
type outputPrinter struct {
	stdout, stderr io.Writer
	// pid is the process's pid, from the start event (0 before it).
	pid int
}

// event handles one event of a process stream; it ignores those it does
// not know (exit is the stream's result).
func (p *outputPrinter) event(event string, data json.RawMessage) error {
	var w io.Writer
	switch event {
	case api.EventStart:
		var s api.ProcessStartResponse
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("decoding start event: %w", err)
		}
		p.pid = s.Pid
		return nil
	case api.EventStdout:
		w = p.stdout
	case api.EventStderr:
		w = p.stderr
	default:
		return nil
	}
	var c api.OutputChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("decoding %s event: %w", event, err)
	}
	b := []byte(c.Data)
	if c.Base64 {
		var err error
		if b, err = base64.StdEncoding.DecodeString(c.Data); err != nil {
			return fmt.Errorf("decoding %s event: %w", event, err)
		}
	}
	return p.write(w, event, c.Dropped, b)
}

// framed handles one event of a process stream read in the framed form,
// as event does.
func (p *outputPrinter) framed(ev client.FramedEvent) error {
	w := p.stdout
	switch ev.Type {
	case api.EventStdout:
	case api.EventStderr:
		w = p.stderr
	default:
		return p.event(ev.Type, ev.Data)
	}
	c, err := ev.Chunk()
	if err != nil {
		return fmt.Errorf("decoding %s event: %w", ev.Type, err)
	}
	return p.write(w, ev.Type, c.Dropped, ev.Bytes)
}

// write writes b of stream event to w, after telling of a gap before it.
func (p *outputPrinter) write(w io.Writer, event string, dropped int64, b []byte) error {
	if dropped > 0 {
		fmt.Fprintf(p.stderr, "hutch: %d bytes of %s were dropped (older than the daemon keeps)\n", dropped, event)
	}
	_, err := w.Write(b)
	return err
}

// logSource is one stream of one process.
type logSource struct {
	pid    int
	stream string
}

// logPrinter prints the combined log lines of sandbox::process::logs:
// each line of output after its process's tag (or pid), stderr marked.
// Output bytes are the process's, written as they are; the prefix is
// escaped.
type logPrinter struct {
	out io.Writer
	// partial marks the sources whose last line is unfinished; last is
	// the source written last.
	partial map[logSource]bool
	last    logSource
}

func (p *logPrinter) event(event string, data json.RawMessage) error {
	switch event {
	case api.EventLog:
		var l api.LogLine
		if err := json.Unmarshal(data, &l); err != nil {
			return fmt.Errorf("decoding a log line: %w", err)
		}
		b := []byte(l.Data)
		if l.Base64 {
			var err error
			if b, err = base64.StdEncoding.DecodeString(l.Data); err != nil {
				return fmt.Errorf("decoding a log line: %w", err)
			}
		}
		return p.write(l.Pid, l.Tag, l.Stream, b, l.Dropped)
	case api.EventExit:
		var info api.ProcessInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return fmt.Errorf("decoding an exit: %w", err)
		}
		status := info.Signal
		if info.ExitCode != nil {
			status = "exit " + strconv.Itoa(*info.ExitCode)
		}
		return p.write(info.Pid, info.Tag, "", []byte("["+status+"]\n"), 0)
	}
	return nil
}

// write prints b of source (pid, stream), starting each new line with the
// source's prefix.
func (p *logPrinter) write(pid int, tag, stream string, b []byte, dropped int64) error {
	src := logSource{pid, stream}
	prefix := strconv.Itoa(pid)
	if tag != "" {
		prefix = safetext.Line(tag, 64) + " " + prefix
	}
	if stream == api.EventStderr {
		prefix += " !"
	}
	prefix += " | "
	var buf bytes.Buffer
	if p.last != src && p.partial[p.last] {
		// Another source's unfinished line: end it on screen (its rest
		// comes after its prefix).
		buf.WriteByte('\n')
		p.partial[p.last] = false
	}
	p.last = src
	if dropped > 0 {
		fmt.Fprintf(&buf, "%s[%d bytes dropped]\n", prefix, dropped)
	}
	for len(b) > 0 {
		if !p.partial[src] {
			buf.WriteString(prefix)
		}
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		buf.Write(line)
		b = b[len(line):]
		p.partial[src] = line[len(line)-1] != '\n'
	}
	_, err := p.out.Write(buf.Bytes())
	return err
}
