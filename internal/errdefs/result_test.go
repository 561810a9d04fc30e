package errdefs

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestResult(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{New(CodeNotFound, "no"), "S002"},
		{fmt.Errorf("wrapped: %w", New(CodeExecBusy, "busy")), "S003"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), "canceled"},
		{Wrap(CodeBootFailed, context.DeadlineExceeded, "boot"), "S300"},
		{errors.New("plain"), "S500"},
	}
	for _, tt := range tests {
		if got := Result(tt.err); got != tt.want {
			t.Errorf("Result(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
