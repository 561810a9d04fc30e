package runtime

import (
	"context"
	"testing"
	"time"
)

type plainRuntime struct{}

func (plainRuntime) Name() string                                  { return "plain" }
func (plainRuntime) Start(context.Context, Spec) (Instance, error) { return nil, nil }
func (plainRuntime) Reconcile(context.Context, func(string) bool) ([]string, error) {
	return nil, nil
}

type slowRuntime struct{ plainRuntime }

func (slowRuntime) BootTimeout() time.Duration { return 2 * time.Minute }

func TestBootTimeoutOf(t *testing.T) {
	if got := BootTimeoutOf(plainRuntime{}); got != 0 {
		t.Errorf("a runtime that does not ask: %v, want 0", got)
	}
	if got := BootTimeoutOf(slowRuntime{}); got != 2*time.Minute {
		t.Errorf("a slow booter: %v, want 2m", got)
	}
}
