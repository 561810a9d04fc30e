package client

// Event streams in hutch's framed form (issue 46: 5): NDJSON lines, where
// a line with "bytes":n is followed by n raw bytes, the event's own (a
// process's output chunk, a file's data). Output moves without a JSON
// string or base64 around each chunk, which cost the daemon and the
// client more than the bytes' trip out of the sandbox.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// framesType is the media type of the framed form.
const framesType = "application/x-hutch-frames"

// maxFrameBytes bounds the raw bytes after one line: an output chunk is
// at most 1 MiB.
const maxFrameBytes = 16 << 20

// FramedEvent is one event of a stream read in the framed form. Data is
// its JSON value; for a stdout or stderr chunk, an api.OutputChunk whose
// data is in Bytes instead (its offset and dropped count stay in Data).
// Bytes is the callback's only until it returns.
type FramedEvent struct {
	Type  string
	Data  json.RawMessage
	Bytes []byte
}

// Chunk decodes the offsets of a stdout or stderr event: Bytes are its
// data.
func (e FramedEvent) Chunk() (api.OutputChunk, error) {
	var c api.OutputChunk
	err := json.Unmarshal(e.Data, &c)
	return c, err
}

// ExecStreamFramed runs a command like ExecStream, its output read in the
// framed form: on gets each event, stdout and stderr with their bytes raw
// in Bytes. Against a daemon that answers NDJSON (one before the framed
// form), the chunks' bytes are decoded into Bytes all the same.
func (c *Client) ExecStreamFramed(ctx context.Context, req api.ExecRequest, on func(FramedEvent) error) (api.ExecResponse, error) {
	var out api.ExecResponse
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return out, err
	}
	return out, c.streamFrames(ctx, http.MethodPost, p+"/exec?stream=true", req, on, &out)
}

// streamFrames is streamEvents for the framed form.
func (c *Client) streamFrames(ctx context.Context, method, path string, in any, on func(FramedEvent) error, out any) error {
	body, contentType, err := jsonBody(path, in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.sendAccepting(ctx, method, path, body, contentType, framesType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var raw []byte
	for {
		line, err := readLine(br)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrStreamCut, err)
		}
		var l eventLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("event stream of %s: %w", path, err)
		}
		if done, err := l.end(path, out); done {
			return err
		}
		ev := FramedEvent{Type: l.Type, Data: l.Data}
		switch {
		case l.Bytes != nil:
			if *l.Bytes < 0 || *l.Bytes > maxFrameBytes {
				return fmt.Errorf("event stream of %s: a frame of %d bytes", path, *l.Bytes)
			}
			if cap(raw) < *l.Bytes {
				raw = make([]byte, *l.Bytes)
			}
			ev.Bytes = raw[:*l.Bytes]
			if _, err := io.ReadFull(br, ev.Bytes); err != nil {
				return fmt.Errorf("%w: %w", ErrStreamCut, err)
			}
		case l.Type == api.EventStdout || l.Type == api.EventStderr:
			if ev.Bytes, err = chunkBytes(l.Data); err != nil {
				return fmt.Errorf("event stream of %s: %w", path, err)
			}
		}
		if on != nil {
			if err := on(ev); err != nil {
				return err
			}
		}
	}
}

// readLine reads one line of at most maxEventLine bytes, without its end.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
	long := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		if len(long) > maxEventLine {
			return nil, fmt.Errorf("an event line longer than %d bytes", maxEventLine)
		}
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
	}
	return bytes.TrimSuffix(long, []byte("\n")), err
}

// chunkBytes is the data of an output chunk sent as JSON.
func chunkBytes(data json.RawMessage) ([]byte, error) {
	var c api.OutputChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if c.Base64 {
		return base64.StdEncoding.DecodeString(c.Data)
	}
	return []byte(c.Data), nil
}
