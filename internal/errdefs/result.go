package errdefs

import (
	"context"
	"errors"
)

// Result labels an outcome for metrics and traces: "ok" for nil,
// "canceled" when the caller went away (a context error that carries no
// S-code), else the error's S-code.
func Result(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if _, ok := errors.AsType[*Error](err); !ok {
			return "canceled"
		}
	}
	return string(CodeOf(err))
}
