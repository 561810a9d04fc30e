package procsvc

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hutch-dev/hutch/internal/agentclient"
)

// TestWaitTimedOut: a wait that the agent ends at the wait's own deadline
// (gRPC's DeadlineExceeded, which can come before the timer here fires) is
// the wait timing out, not the agent failing; an agent that never answers,
// or answers another error, is a failure.
func TestWaitTimedOut(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"the agent's side of the deadline", live, fmt.Errorf("wait: %w", status.Error(codes.DeadlineExceeded, "context deadline exceeded")), true},
		{"the timer here", ended, status.Error(codes.Canceled, "context canceled"), true},
		{"no answer", live, fmt.Errorf("wait: %w", &agentclient.NoAnswerError{}), false},
		{"another error", live, status.Error(codes.Unavailable, "gone"), false},
	} {
		if got := waitTimedOut(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: waitTimedOut = %v, want %v", tc.name, got, tc.want)
		}
	}
}
