package bench

// State scenarios: freezing a sandbox and thawing it again.

import (
	"context"
	"fmt"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// pauseResume times a freeze and a resume of one sandbox that runs a
// python process, from the pause call's start to the resume's answer, and
// checks each time that the sandbox answers an exec again.
func pauseResume(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		if _, err := e.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-c", "import time\nwhile True: time.sleep(1)"}}); err != nil {
			return err
		}
		for i := range e.opts.Warmup + e.opts.Runs {
			start := time.Now()
			if _, err := e.c.Pause(ctx, id, api.PauseFreeze); err != nil {
				return err
			}
			if _, err := e.c.Resume(ctx, id); err != nil {
				return err
			}
			took := time.Since(start)
			if _, err := e.exec(ctx, id, "true"); err != nil {
				return fmt.Errorf("exec after resume: %w", err)
			}
			if i >= e.opts.Warmup {
				samples = append(samples, took)
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res := latencyResult(samples)
	res.Note = "sandbox::pause (freeze) then sandbox::resume of a sandbox running a python process; an exec checks it answers after each"
	return res, nil
}
