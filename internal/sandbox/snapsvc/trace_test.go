package snapsvc

import (
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestForkSpans: a fork is a sandbox.fork span holding its checkpoint's
// sandbox.checkpoint span, ended with the fork's error (issue 46: where a
// fork's time goes).
func TestForkSpans(t *testing.T) {
	rec := testutil.RecordSpans(t)

	s, core := onFake(t, t.TempDir(), 10)
	sb := checkpointable(core, "alice", 10)
	if _, err := s.Fork(as("alice"), api.ForkRequest{SandboxID: sb.ID, Count: 2}); err != nil {
		t.Fatal(err)
	}
	core.failAt = 1
	_, err := s.Fork(as("alice"), api.ForkRequest{SandboxID: sb.ID, Count: 2})
	wantCode(t, err, errdefs.CodeCapacity)

	var forks, checkpoints []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "sandbox.fork":
			forks = append(forks, sp)
		case "sandbox.checkpoint":
			checkpoints = append(checkpoints, sp)
		}
	}
	if len(forks) != 2 || len(checkpoints) != 2 {
		t.Fatalf("%d fork and %d checkpoint spans, want 2 of each", len(forks), len(checkpoints))
	}
	for i := range forks {
		if checkpoints[i].Parent().SpanID() != forks[i].SpanContext().SpanID() {
			t.Errorf("checkpoint span %d is not its fork's child", i)
		}
	}
	if forks[0].Status().Code == codes.Error || forks[1].Status().Code != codes.Error {
		t.Errorf("fork spans' status %v, %v: want the failed fork's alone an error", forks[0].Status(), forks[1].Status())
	}
}
