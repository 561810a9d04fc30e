package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hutch-dev/hutch/api"
)

// WatchFiles runs sandbox::fs::watch: on is called with each change until
// ctx ends, on returns an error, or the watch ends (the directory
// removed, the sandbox stopped: its error).
func (c *Client) WatchFiles(ctx context.Context, req api.FsWatchRequest, on func(api.FsWatchEvent) error) error {
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return err
	}
	q := url.Values{"path": {req.Path}}
	if req.Recursive {
		q.Set("recursive", "true")
	}
	if req.User != "" {
		q.Set("user", req.User)
	}
	return c.streamEvents(ctx, http.MethodGet, p+"/fs/watch?"+q.Encode(), nil, func(event string, data json.RawMessage) error {
		if event != "change" {
			return nil
		}
		var e api.FsWatchEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("a watch event: %w", err)
		}
		return on(e)
	}, nil)
}
