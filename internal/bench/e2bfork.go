package bench

// e2b-fork-exec (issue 40): E2B's sandbox.fork() against hutch's own
// sandbox::fork, each until its copy answered a first command.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// e2bForkExec times, in the same rounds and alternating which goes first,
// E2B's POST /sandboxes/{id}/fork {count: 1} until the copy answered
// commands.run('true') through envd, and hutch's sandbox::fork of one
// copy until it answered the REST exec of true, both of one idle sandbox
// created through the E2B API. The copies are killed off the clock. Its
// rounds are at most 5, after one warm-up.
func e2bForkExec(ctx context.Context, e *env) (Result, error) {
	x := newE2BClient(e.c, e.opts)
	defer x.close()
	sb, err := x.create(ctx, e2bCreateBody(e.opts.Image))
	if err != nil {
		return Result{}, err
	}
	defer x.killOffClock(ctx, e, sb.ID)
	viaE2B := func() (time.Duration, error) {
		start := time.Now()
		var forks []struct {
			Sandbox *e2bSandbox `json:"sandbox"`
		}
		status, err := x.control(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(sb.ID)+"/fork", []byte(`{"count":1}`), &forks)
		if err == nil && (status != http.StatusCreated || len(forks) != 1 || forks[0].Sandbox == nil) {
			err = fmt.Errorf("answered %d with %d forks, want 201 with one sandbox", status, len(forks))
		}
		if err != nil {
			return 0, fmt.Errorf("e2b fork: %w", err)
		}
		copied := *forks[0].Sandbox
		_, _, err = x.run(ctx, copied, e2bCommand)
		took := time.Since(start)
		if kerr := x.killAndWait(ctx, e.c, copied.ID); err == nil {
			err = kerr
		}
		return took, err
	}
	viaHutch := func() (time.Duration, error) {
		start := time.Now()
		resp, err := e.c.Fork(ctx, sb.ID, 1)
		if err != nil {
			return 0, err
		}
		_, err = e.exec(ctx, resp.SandboxIDs[0], "true")
		took := time.Since(start)
		e.stopSandboxes(ctx, resp.SandboxIDs)
		return took, err
	}
	sides := [2]func() (time.Duration, error){viaE2B, viaHutch}
	var samples [2][]time.Duration
	runs := min(e.opts.Runs, 5)
	for round := range 1 + runs {
		for k := range sides {
			i := (k + round) % len(sides)
			d, err := sides[i]()
			if err != nil {
				return Result{}, err
			}
			if round >= 1 {
				samples[i] = append(samples[i], d)
			}
		}
	}
	res := latencyResult(samples[0])
	base := latencyResult(samples[1])
	base.Name, base.Title = "fork-exec-one", "hutch sandbox::fork of one copy → first REST exec true, same sandbox and rounds"
	res.Baselines = []Result{base}
	ratio := 0.0
	if base.Latency.P50 > 0 {
		ratio = float64(res.Latency.P50) / float64(base.Latency.P50)
	}
	res.Note = fmt.Sprintf("E2B fork → commands.run('true') p50 %s ms, hutch fork → exec true p50 %s ms: %.2f× (%d rounds after one warm-up, "+
		"alternating which goes first; the E2B copy runs /bin/bash -l -c true through envd, as commands.run does)",
		fmtMs(res.Latency.P50), fmtMs(base.Latency.P50), ratio, runs)
	return res, nil
}
