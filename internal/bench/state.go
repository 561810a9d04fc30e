package bench

// State scenarios: freezing a sandbox and thawing it again, snapshots,
// restores, forks and hibernation.

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

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

// forkCopies is how many copies the fork scenario makes at once.
const forkCopies = 10

// MaxForkWide bounds Options.ForkWide: sandbox::fork's own bound on copies.
const MaxForkWide = 100

// snapshotLatency times snapshots of an idle python sandbox (each deleted
// after), and notes their median size.
func snapshotLatency(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	var sizes []uint64
	err := e.withSandbox(ctx, func(id string) error {
		for i := range e.opts.Warmup + e.opts.Runs {
			start := time.Now()
			snap, err := e.c.CreateSnapshot(ctx, id, "")
			took := time.Since(start)
			if err != nil {
				return err
			}
			if _, err := e.c.DeleteSnapshot(ctx, snap.SnapshotID); err != nil {
				return err
			}
			if i >= e.opts.Warmup {
				samples = append(samples, took)
				sizes = append(sizes, uint64(snap.SizeBytes))
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res := latencyResult(samples)
	res.Note = fmt.Sprintf("sandbox::snapshot::create of an idle %s sandbox, which goes on running; median size %.1f MiB", e.opts.Image, mib(SummarizeSizes(sizes).P50))
	return res, nil
}

// restoreExec times a create from a snapshot until its first exec answered.
func restoreExec(ctx context.Context, e *env) (Result, error) {
	var samples []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		snap, err := e.c.CreateSnapshot(ctx, id, "")
		if err != nil {
			return err
		}
		defer e.c.DeleteSnapshot(context.WithoutCancel(ctx), snap.SnapshotID) //nolint:errcheck // best effort
		for i := range e.opts.Warmup + e.opts.Runs {
			start := time.Now()
			copyID, err := e.createWith(ctx, api.CreateRequest{SnapshotID: snap.SnapshotID})
			if err != nil {
				return err
			}
			_, err = e.exec(ctx, copyID, "true")
			took := time.Since(start)
			e.stops.stop(ctx, copyID)
			if err != nil {
				return err
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
	res.Note = "sandbox::create {snapshot_id} of an idle sandbox's snapshot, then exec true in the copy"
	return res, nil
}

// forkExec times a fork into forkCopies copies until each has answered an
// exec. Its runs are at most 5: each makes forkCopies sandboxes. With
// Options.ForkWide, forks of that many copies are timed too, at most 3
// runs after one warm-up, as a row of their own (issue 46).
func forkExec(ctx context.Context, e *env) (Result, error) {
	runs := min(e.opts.Runs, 5)
	var samples, wide []time.Duration
	err := e.withSandbox(ctx, func(id string) error {
		var err error
		if samples, err = e.forkRounds(ctx, id, forkCopies, runs); err != nil || e.opts.ForkWide == 0 {
			return err
		}
		wide, err = e.forkRounds(ctx, id, e.opts.ForkWide, min(runs, 3))
		return err
	})
	if err != nil {
		return Result{}, err
	}
	res := latencyResult(samples)
	res.Note = fmt.Sprintf("sandbox::fork of an idle sandbox into %d copies, until each answered exec true (%d runs after one warm-up)", forkCopies, runs)
	if len(wide) > 0 {
		w := latencyResult(wide)
		w.Name, w.Title = fmt.Sprintf("fork-exec-%d", e.opts.ForkWide), fmt.Sprintf("fork ×%d → every first exec", e.opts.ForkWide)
		res.Baselines = append(res.Baselines, w)
		res.Note += fmt.Sprintf("; ×%d: the same with %d copies, %d runs", e.opts.ForkWide, e.opts.ForkWide, len(wide))
	}
	return res, nil
}

// forkRounds times 1+runs forks of sandbox id into copies copies, each
// until every copy answered exec true, and returns all but the first
// (the warm-up); the copies are stopped off the clock.
func (e *env) forkRounds(ctx context.Context, id string, copies, runs int) ([]time.Duration, error) {
	var samples []time.Duration
	for i := range 1 + runs {
		start := time.Now()
		resp, err := e.c.Fork(ctx, id, copies)
		if err != nil {
			return nil, err
		}
		var g errgroup.Group
		for _, c := range resp.SandboxIDs {
			g.Go(func() error {
				_, err := e.exec(ctx, c, "true")
				return err
			})
		}
		err = g.Wait()
		took := time.Since(start)
		e.stopSandboxes(ctx, resp.SandboxIDs)
		if err != nil {
			return nil, err
		}
		if i >= 1 {
			samples = append(samples, took)
		}
	}
	return samples, nil
}

// hibernatedMemory hibernates sandboxes and measures what their host
// processes hold meanwhile.
func hibernatedMemory(ctx context.Context, e *env) (Result, error) {
	if err := e.checkLocal(); err != nil {
		return Result{}, err
	}
	n := min(e.opts.Runs, 5)
	ids, err := e.createSandboxes(ctx, n, func(id string) error {
		_, err := e.c.Pause(ctx, id, api.PauseHibernate)
		return err
	})
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	pss, _, err := treePSS(ids)
	if err != nil {
		return Result{}, err
	}
	samples := make([]uint64, len(ids))
	for i, id := range ids {
		samples[i] = pss[id]
	}
	s := SummarizeSizes(samples)
	return Result{Memory: &s, Note: fmt.Sprintf("%d sandboxes paused with depth hibernate: the PSS of the host processes each still has", n)}, nil
}
