package bench

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// poolInfo is what the daemon's /metrics said of the warm pool of the
// benchmark's image when the run started.
type poolInfo struct {
	// target is the pool's configured size; 0 without a pool.
	target int
	// why explains a target of 0.
	why string
}

// poolWaitTimeout bounds the wait for the pool to refill between runs.
const poolWaitTimeout = 2 * time.Minute

// metricValue finds the value of the sample with exactly this name and
// these labels in a Prometheus text exposition.
func metricValue(text, sample string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// poolState reads the pool of the benchmark's image on the measured
// daemon: its target, the sandboxes ready and the creates it served.
func (e *env) poolState(ctx context.Context) (target, ready int, hits uint64, err error) {
	return e.poolStateOf(ctx, e.c)
}

// poolStateOf is poolState on the daemon c talks to.
func (e *env) poolStateOf(ctx context.Context, c *client.Client) (target, ready int, hits uint64, err error) {
	return e.poolOf(ctx, c, e.opts.Image)
}

// poolOf is the state of image's pool on the daemon c talks to.
func (e *env) poolOf(ctx context.Context, c *client.Client, image string) (target, ready int, hits uint64, err error) {
	text, err := c.Prometheus(ctx)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading the daemon's /metrics: %w", err)
	}
	label := `{image="` + image + `"}`
	t, _ := metricValue(text, "hutch_warm_pool_target"+label)
	r, _ := metricValue(text, "hutch_warm_pool_ready"+label)
	h, _ := metricValue(text, `hutch_warm_pool_claims_total{image="`+image+`",result="hit"}`)
	return int(t), int(r), uint64(h), nil
}

// readPool learns whether the daemon keeps a warm pool of the benchmark's
// image, at the start of a run.
func (e *env) readPool(ctx context.Context) {
	target, _, _, err := e.poolState(ctx)
	switch {
	case err != nil:
		e.pool = poolInfo{why: err.Error()}
	case target == 0:
		e.pool = poolInfo{why: fmt.Sprintf("the daemon keeps no warm pool of %s (its config has warm_pool: {} or warm_pool_auto: false and no warm_pool: {%s: N})", e.opts.Image, e.opts.Image)}
	default:
		e.pool = poolInfo{target: target}
	}
}

// createRequest is the create a scenario times. A cold one, on a daemon
// with a warm pool of the image, asks for 1 MiB more memory than the
// default: the pool holds only sandboxes of the default shape, so each
// such create boots its own sandbox, of practically the same size. note
// says so for the report.
func (e *env) createRequest(ctx context.Context, cold bool) (req api.CreateRequest, note string, err error) {
	req = api.CreateRequest{Image: e.opts.Image, Name: sandboxName}
	if !cold || e.pool.target == 0 {
		return req, "", nil
	}
	d, err := e.learnDefaults(ctx)
	if err != nil {
		return req, "", err
	}
	req.MemoryMB = d.MemoryMB + 1
	return req, fmt.Sprintf("creates ask for memory_mb %d (default %d + 1) so that the daemon's warm pool of %d does not serve them",
		req.MemoryMB, d.MemoryMB, e.pool.target), nil
}

// learnDefaults returns the limits a create without any gets, from a
// sandbox created for the purpose (once per run).
func (e *env) learnDefaults(ctx context.Context) (api.SandboxInfo, error) {
	if e.defaults != nil {
		return *e.defaults, nil
	}
	var info api.SandboxInfo
	err := e.withSandbox(ctx, func(id string) error {
		var err error
		info, err = e.c.Get(ctx, id)
		return err
	})
	if err != nil {
		return info, fmt.Errorf("learning the daemon's default limits: %w", err)
	}
	e.defaults = &info
	return info, nil
}

// poolCreateFirstExec times a create served by the warm pool plus its
// first exec, on the daemon with the default pool (Options.PoolDaemon)
// when there is one. Before each run, off the clock, earlier sandboxes
// are gone and the pool is full again; after it, the pool's hit counter
// must have moved, or the run is an error (the create booted instead).
func poolCreateFirstExec(ctx context.Context, e *env) (Result, error) {
	c := e.poolDaemon()
	if !e.hasPool(c) {
		return Result{}, skipf("%s", e.pool.why)
	}
	var targets []int
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		if err := e.stops.drain(); err != nil {
			return 0, err
		}
		target, hits, err := e.poolFull(ctx, c)
		if err != nil {
			return 0, err
		}
		targets = append(targets, target)
		d, id, err := createThenExec(ctx, c, api.CreateRequest{Image: e.opts.Image, Name: sandboxName})
		if id != "" {
			defer e.stopOn(ctx, c, id)
		}
		if err != nil {
			return 0, err
		}
		if _, _, after, err := e.poolStateOf(ctx, c); err != nil {
			return 0, err
		} else if after != hits+1 {
			return 0, fmt.Errorf("create of sandbox %s did not come from the warm pool (pool hits %d, then %d)", id, hits, after)
		}
		return d, nil
	})
	res := latencyResult(samples)
	res.Note = fmt.Sprintf("the pool (%s %s sandboxes) is refilled and earlier sandboxes are gone before each run, off the clock", poolSizes(targets), e.opts.Image)
	if e.opts.PoolDaemon != nil {
		res.Note = "a daemon with the default warm pool settings (sized by demand); " + res.Note
	}
	return res, err
}

// poolSizes renders the pool targets seen over the runs: "2", or "1–3".
func poolSizes(targets []int) string {
	if len(targets) == 0 {
		return "0"
	}
	lo, hi := slices.Min(targets), slices.Max(targets)
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// stopOn stops sandbox id on c: through the stopper on the measured
// daemon, at once elsewhere.
func (e *env) stopOn(ctx context.Context, c *client.Client, id string) {
	if c == e.c {
		e.stops.stop(ctx, id)
		return
	}
	e.stopAll(ctx, c, []string{id})
}

// hasPool reports whether the daemon c talks to keeps a warm pool of the
// benchmark's image: the one with the default pool settings does, the
// measured one if its /metrics said so at the start.
func (e *env) hasPool(c *client.Client) bool {
	return c == e.opts.PoolDaemon || e.pool.target > 0
}

// poolFull waits until the pool of the daemon c talks to plans at least
// one sandbox and holds its target, and returns the target and the hit
// count then.
func (e *env) poolFull(ctx context.Context, c *client.Client) (target int, hits uint64, err error) {
	return e.poolFullOf(ctx, c, e.opts.Image)
}

// poolFullOf is poolFull for image's pool.
func (e *env) poolFullOf(ctx context.Context, c *client.Client, image string) (target int, hits uint64, err error) {
	deadline := time.Now().Add(poolWaitTimeout)
	for {
		target, ready, hits, err := e.poolOf(ctx, c, image)
		if err != nil {
			return 0, 0, err
		}
		if target > 0 && ready >= target {
			return target, hits, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("the warm pool holds %d of %d sandboxes after %s", ready, target, poolWaitTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
