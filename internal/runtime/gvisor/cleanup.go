package gvisor

import (
	"context"
	"errors"
	"time"
)

// undoTimeout bounds how long undoing a partial Start, or a Destroy, may take.
const undoTimeout = 30 * time.Second

// cleanupStack collects the steps that undo partial work. Run executes them
// in reverse order unless Release was called first.
type cleanupStack struct {
	steps []func(ctx context.Context) error
}

// Add pushes an undo step.
func (c *cleanupStack) Add(step func(ctx context.Context) error) {
	c.steps = append(c.steps, step)
}

// Release forgets every step: the work succeeded and is kept.
func (c *cleanupStack) Release() { c.steps = nil }

// Run undoes the work in reverse order on a context that outlives the
// caller's (which is often the reason for the undo), bounded by undoTimeout.
func (c *cleanupStack) Run(ctx context.Context) error {
	if len(c.steps) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	var errs []error
	for i := len(c.steps) - 1; i >= 0; i-- {
		if err := c.steps[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	c.steps = nil
	return errors.Join(errs...)
}
