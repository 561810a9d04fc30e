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

// e2bForkExec times, in the same rounds and rotating which goes first,
// E2B's POST /sandboxes/{id}/fork {count: 1} until the copy answered a
// command through envd, and hutch's sandbox::fork of one copy until it
// answered the REST exec of the same command, each of an idle sandbox
// created through the E2B API. The command is commands.run('true')'s
// /bin/bash -l -c true (the target's pair), and /bin/true both ways, which
// leaves bash -l's login files out. The copies are killed off the clock.
// Its rounds are at most 5, after one warm-up.
func e2bForkExec(ctx context.Context, e *env) (Result, error) {
	x := newE2BClient(e.c, e.opts)
	defer x.close()
	sb, err := x.create(ctx, e2bCreateBody(e.opts.Image))
	if err != nil {
		return Result{}, err
	}
	defer x.killOffClock(ctx, e, sb.ID)
	viaE2B := func(argv []string) func() (time.Duration, error) {
		return func() (time.Duration, error) {
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
			_, _, err = x.run(ctx, copied, argv)
			took := time.Since(start)
			if kerr := x.killAndWait(ctx, e.c, copied.ID); err == nil {
				err = kerr
			}
			return took, err
		}
	}
	viaHutch := func(argv []string) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			start := time.Now()
			resp, err := e.c.Fork(ctx, sb.ID, 1)
			if err != nil {
				return 0, err
			}
			_, err = e.exec(ctx, resp.SandboxIDs[0], argv...)
			took := time.Since(start)
			e.stopSandboxes(ctx, resp.SandboxIDs)
			return took, err
		}
	}
	sides := [4]func() (time.Duration, error){viaE2B(e2bCommand), viaHutch(e2bCommand), viaE2B(e2bBare), viaHutch(e2bBare)}
	var samples [4][]time.Duration
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
	var r [4]Result
	for i := range r {
		r[i] = latencyResult(samples[i])
	}
	r[1].Name, r[1].Title = "fork-exec-bash", "hutch sandbox::fork of one copy → first REST exec of /bin/bash -l -c true, same sandbox and rounds"
	r[2].Name, r[2].Title = "e2b-fork-exec-bare", "E2B sandbox.fork() → envd Process.Start of /bin/true in the copy, same sandbox and rounds"
	r[3].Name, r[3].Title = "fork-exec-bare", "hutch sandbox::fork of one copy → first REST exec of /bin/true, same sandbox and rounds"
	res := r[0]
	res.Baselines = r[1:]
	res.Note = fmt.Sprintf("Both sides run the same command in the copy: E2B fork → commands.run('true'), which sends /bin/bash -l -c true "+
		"to envd (Process.Start), p50 %s ms; hutch fork → REST exec of /bin/bash -l -c true p50 %s ms: %.2f×. "+
		"Without bash (/bin/true both ways, which leaves out the image's login files): E2B p50 %s ms, hutch p50 %s ms: %.2f×. "+
		"%d rounds after one warm-up, the four calls' order rotating; each copy is killed off the clock",
		fmtMs(r[0].Latency.P50), fmtMs(r[1].Latency.P50), ratioOf(r[0], r[1]),
		fmtMs(r[2].Latency.P50), fmtMs(r[3].Latency.P50), ratioOf(r[2], r[3]), runs)
	return res, nil
}

// ratioOf is a's p50 over b's, 0 when b has none.
func ratioOf(a, b Result) float64 {
	if b.Latency.P50 <= 0 {
		return 0
	}
	return float64(a.Latency.P50) / float64(b.Latency.P50)
}
