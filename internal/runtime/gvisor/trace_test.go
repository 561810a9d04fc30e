package gvisor

import (
	"context"
	"errors"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
)

// TestPhaseSpans: a start's step is a span, a child of the caller's,
// ended once with the step's error (issue 46: where a restore's time
// goes); runsc's step is named for the command.
func TestPhaseSpans(t *testing.T) {
	rec := testutil.RecordSpans(t)

	ctx, parent := otel.Tracer("test").Start(context.Background(), "sandbox.boot")
	ok := phase(ctx, runscPhase("/snap"))
	ok(nil)
	ok(errors.New("later calls do nothing"))
	failed := phase(ctx, runscPhase(""))
	failed(errors.New("runsc failed"))
	failed(nil)
	parent.End()

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	for i, want := range []struct {
		name string
		code codes.Code
	}{{"runsc.restore", codes.Unset}, {"runsc.run", codes.Error}} {
		sp := spans[i]
		if sp.Name() != want.name || sp.Status().Code != want.code || sp.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: %s %v (parent %v), want %s %v under sandbox.boot", i, sp.Name(), sp.Status(), sp.Parent().SpanID(), want.name, want.code)
		}
	}
}
