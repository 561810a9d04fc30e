package envd

import (
	"context"

	"github.com/hutch-dev/hutch/internal/functions"
)

// call is functions.Call with its errors as Connect errors.
func call[Resp any](ctx context.Context, t *functions.Table, id string, req any) (Resp, error) {
	out, err := functions.Call[Resp](ctx, t, id, req)
	if err != nil {
		return out, connectError(err)
	}
	return out, nil
}

// stream runs streaming function id on req; the caller closes the stream.
func stream(ctx context.Context, t *functions.Table, id string, req any) (*functions.Stream, error) {
	return call[*functions.Stream](ctx, t, id, req)
}
