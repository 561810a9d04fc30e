package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// maxMetricsBytes bounds the /metrics exposition Prometheus reads.
const maxMetricsBytes = 16 << 20

// Prometheus returns the daemon's metrics (GET /metrics) in the Prometheus
// text format.
func (c *Client) Prometheus(ctx context.Context) (string, error) {
	resp, err := c.send(ctx, http.MethodGet, "/metrics", nil, "")
	if err != nil {
		return "", err
	}
	defer closeBody(resp)
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return "", fmt.Errorf("reading /metrics: %w", err)
	}
	return string(b), nil
}
