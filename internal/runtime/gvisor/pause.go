package gvisor

import (
	"context"
	"fmt"

	"github.com/hutch-dev/hutch/internal/runtime"
)

var _ runtime.Pauser = (*instance)(nil)

// Pause freezes every task of the sandbox (runsc pause); its agent stops
// answering until Resume.
func (i *instance) Pause(ctx context.Context) error {
	if _, err := i.rt.runscOutput(ctx, i.id, "pause", i.id); err != nil {
		return fmt.Errorf("pausing sandbox %s: %w", i.id, err)
	}
	return nil
}

// Resume thaws a paused sandbox (runsc resume).
func (i *instance) Resume(ctx context.Context) error {
	if _, err := i.rt.runscOutput(ctx, i.id, "resume", i.id); err != nil {
		return fmt.Errorf("resuming sandbox %s: %w", i.id, err)
	}
	return nil
}
