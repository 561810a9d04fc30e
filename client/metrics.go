package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// Metrics reports a live sandbox's resource use (sandbox::metrics): CPU
// seconds, memory and host tasks, read from its cgroups.
func (c *Client) Metrics(ctx context.Context, id string) (api.MetricsResponse, error) {
	var out api.MetricsResponse
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p+"/metrics", nil, &out)
}

// MetricsStream hands the sandbox's metrics document to on every
// interval until it stops, on fails or ctx ends (sandbox::metrics::stream).
func (c *Client) MetricsStream(ctx context.Context, id string, interval time.Duration, on func(api.MetricsResponse) error) error {
	p, err := sandboxPath(id)
	if err != nil {
		return err
	}
	q := "?interval_ms=" + strconv.FormatInt(interval.Milliseconds(), 10)
	return c.streamEvents(ctx, http.MethodGet, p+"/metrics/stream"+q, nil, func(_ string, data json.RawMessage) error {
		var m api.MetricsResponse
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		return on(m)
	}, nil)
}
