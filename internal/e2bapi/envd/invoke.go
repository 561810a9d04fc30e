package envd

import (
	"context"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// call runs function id of the table on req and returns its result as a
// Resp; errors are Connect errors.
func call[Resp any](ctx context.Context, t *functions.Table, id string, req any) (Resp, error) {
	var zero Resp
	res, err := functions.Invoke(ctx, t, id, req)
	if err != nil {
		return zero, connectError(err)
	}
	out, ok := res.(Resp)
	if !ok {
		return zero, connectError(errdefs.New(errdefs.CodeInternal, "%s answered a %T, not a %T", id, res, zero))
	}
	return out, nil
}

// stream runs streaming function id on req; the caller closes the stream.
func stream(ctx context.Context, t *functions.Table, id string, req any) (*functions.Stream, error) {
	return call[*functions.Stream](ctx, t, id, req)
}
