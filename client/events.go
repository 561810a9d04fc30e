package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hutch-dev/hutch/api"
)

// maxEventLine bounds one line of an event stream: an output chunk is at
// most a few hundred KiB even in base64; a cell's result, with its images,
// up to 32 MiB.
const maxEventLine = 48 << 20

// ErrStreamCut is the error of an event stream that ended without its
// result: the connection broke or the daemon stopped.
var ErrStreamCut = errors.New("event stream cut off before its result")

// streamEvents sends one request whose answer is an event stream (NDJSON),
// calls on for every event with its data, and decodes the final value into
// out. An error event is returned as its *api.ErrorEnvelope; an error from
// on ends the stream (and cancels the daemon's side) with that error.
func (c *Client) streamEvents(ctx context.Context, method, path string, in any, on func(event string, data json.RawMessage) error, out any) error {
	body, contentType, err := jsonBody(path, in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.sendAccepting(ctx, method, path, body, contentType, "application/x-ndjson")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	for sc.Scan() {
		var line eventLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("event stream of %s: %w", path, err)
		}
		if done, err := line.end(path, out); done {
			return err
		}
		if on != nil {
			if err := on(line.Type, line.Data); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStreamCut, err)
	}
	return ErrStreamCut
}

// eventLine is one line of an NDJSON stream, or of the framed form (whose
// lines may say how many raw bytes follow them).
type eventLine struct {
	Type   string             `json:"type"`
	Data   json.RawMessage    `json:"data"`
	Result json.RawMessage    `json:"result"`
	Error  *api.ErrorEnvelope `json:"error"`
	Bytes  *int               `json:"bytes"`
}

// end reports whether l ends the stream, and then with what: its result
// decoded into out, or its error.
func (l *eventLine) end(path string, out any) (bool, error) {
	switch l.Type {
	case "result":
		if out == nil {
			return true, nil
		}
		return true, json.Unmarshal(l.Result, out)
	case "error":
		if l.Error == nil {
			return true, fmt.Errorf("event stream of %s: error event without an error", path)
		}
		return true, l.Error
	}
	return false, nil
}
