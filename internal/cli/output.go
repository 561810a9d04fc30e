package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hutch-dev/hutch/api"
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
	if c.Dropped > 0 {
		fmt.Fprintf(p.stderr, "hutch: %d bytes of %s were dropped (older than the daemon keeps)\n", c.Dropped, event)
	}
	b := []byte(c.Data)
	if c.Base64 {
		var err error
		if b, err = base64.StdEncoding.DecodeString(c.Data); err != nil {
			return fmt.Errorf("decoding %s event: %w", event, err)
		}
	}
	_, err := w.Write(b)
	return err
}
