package bench

// The E2B scenarios (issue 22): commands.run('true') through E2B's envd
// against hutch's own REST exec in the same sandbox, and Sandbox.create
// from the warm pool. They speak the wire the stock SDKs speak
// (e2bclient.go).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// e2bCommand is what commands.run('true') runs, and the REST exec beside
// it; e2bBare is the same without bash, which tells the transport's share
// of the difference from bash's.
var (
	e2bCommand = []string{"/bin/bash", "-l", "-c", "true"}
	e2bBare    = []string{"/bin/true"}
)

// e2bSide is one of the calls timed in each round of e2b-exec-true.
type e2bSide struct {
	run func() (d, started time.Duration, err error)
	// samples and starts (E2B only: its start event) are the timed
	// rounds'.
	samples, starts []time.Duration
}

// e2bExecTrue times commands.run('true') through E2B's envd and, in the
// same sandbox and rounds, hutch's REST exec of the same /bin/bash -l -c
// true, and both of /bin/true without bash; the order of the four calls
// rotates from round to round. The sandbox is created and killed through
// the E2B API, off the clock.
func e2bExecTrue(ctx context.Context, e *env) (Result, error) {
	x := newE2BClient(e.c, e.opts)
	defer x.close()
	sb, err := x.create(ctx, e2bCreateBody(e.opts.Image))
	if err != nil {
		return Result{}, err
	}
	defer x.killOffClock(ctx, e, sb.ID)
	viaE2B := func(argv []string) func() (time.Duration, time.Duration, error) {
		return func() (time.Duration, time.Duration, error) {
			started, d, err := x.run(ctx, sb, argv)
			return d, started, err
		}
	}
	viaREST := func(argv []string) func() (time.Duration, time.Duration, error) {
		return func() (time.Duration, time.Duration, error) {
			start := time.Now()
			err := httpExec(ctx, e, sb.ID, argv...)
			if notFound(err) {
				err = fmt.Errorf("%w (the REST API does not see the E2B key's sandbox: give the E2B key and HUTCH_TOKEN one owner)", err)
			}
			return time.Since(start), 0, err
		}
	}
	sides := []*e2bSide{{run: viaE2B(e2bCommand)}, {run: viaREST(e2bCommand)}, {run: viaE2B(e2bBare)}, {run: viaREST(e2bBare)}}
	var added []time.Duration
	// One untimed round first finds out a path that does not work.
	for round := -1; round < e.opts.Warmup+e.opts.Runs; round++ {
		var took [4]time.Duration
		for k := range sides {
			i := (k + round + 1) % len(sides)
			d, started, err := sides[i].run()
			if err != nil {
				return Result{}, err
			}
			took[i] = d
			if round >= e.opts.Warmup {
				sides[i].samples, sides[i].starts = append(sides[i].samples, d), append(sides[i].starts, started)
			}
		}
		if round >= e.opts.Warmup {
			added = append(added, took[0]-took[1])
		}
	}
	res := latencyResult(sides[0].samples)
	base := latencyResult(sides[1].samples)
	base.Name, base.Title = "rest-exec-bash", "hutch REST exec of /bin/bash -l -c true, same sandbox and rounds"
	res.Baselines = []Result{base}
	res.Note = e2bExecNote(*res.Latency, *base.Latency, Summarize(added), Summarize(sides[0].starts)) + "; " +
		e2bBareNote(Summarize(sides[2].samples), Summarize(sides[3].samples), Summarize(sides[2].starts))
	return res, nil
}

// e2bExecNote says how commands.run compares with the REST exec.
func e2bExecNote(e2b, rest, added, starts Stats) string {
	return fmt.Sprintf("E2B − REST: p50 %s ms (%s vs %s), p90 %s ms (%s vs %s); median of the per-round differences %s ms. "+
		"Both run /bin/bash -l -c true in one sandbox (bash -l costs both the same), in rounds whose order rotates. "+
		"hutch's envd serves commands.run as a background process started and followed in one agent call "+
		"(sandbox::process::start::stream: the start event with the pid, p50 %s ms after the call, then its output to the end), over a Connect stream "+
		"(JSON codec, HTTP/1.1); the REST exec is one sandbox::exec call",
		signedMs(e2b.P50-rest.P50), fmtMs(e2b.P50), fmtMs(rest.P50), signedMs(e2b.P90-rest.P90), fmtMs(e2b.P90), fmtMs(rest.P90),
		signedMs(added.P50), fmtMs(starts.P50))
}

// e2bBareNote says how the two paths compare without bash.
func e2bBareNote(e2b, rest, starts Stats) string {
	return fmt.Sprintf("without bash (/bin/true both ways, same rounds): E2B p50 %s ms (start event %s ms), REST p50 %s ms, E2B − REST %s ms: "+
		"what the wire and the background process path add, free of bash -l's spread",
		fmtMs(e2b.P50), fmtMs(starts.P50), fmtMs(rest.P50), signedMs(e2b.P50-rest.P50))
}

// signedMs renders d in milliseconds with a sign.
func signedMs(d time.Duration) string { return fmt.Sprintf("%+.2f", ms(d)) }

// e2bCreate times Sandbox.create (POST /v2/sandboxes until its 201) on
// the daemon with the default warm pool when there is one, and counts the
// creates the pool served (its hit counter moved). Before each run, off
// the clock, the pool is full; after it the sandbox is killed (DELETE
// /sandboxes/{id}) and its teardown waited for.
func e2bCreate(ctx context.Context, e *env) (Result, error) {
	c := e.poolDaemon()
	if !e.hasPool(c) {
		return Result{}, skipf("%s", e.pool.why)
	}
	x := newE2BClient(c, e.opts)
	defer x.close()
	var (
		targets []int
		booted  []string
		run     int
	)
	samples, err := e.repeat(ctx, func(ctx context.Context) (time.Duration, error) {
		run++
		if err := e.stops.drain(); err != nil {
			return 0, err
		}
		target, hits, err := e.poolFull(ctx, c)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		sb, err := x.create(ctx, e2bCreateBody(e.opts.Image))
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		_, _, after, err := e.poolStateOf(ctx, c)
		if kerr := x.killAndWait(ctx, c, sb.ID); err == nil {
			err = kerr
		}
		if err != nil {
			return 0, err
		}
		if timed := run - e.opts.Warmup; timed > 0 {
			targets = append(targets, target)
			if after == hits {
				booted = append(booted, strconv.Itoa(timed))
			}
		}
		return d, nil
	})
	res := latencyResult(samples)
	res.Note = e2bCreateNote(len(samples), booted, poolSizes(targets), e.opts.Image, e.opts.PoolDaemon != nil)
	return res, err
}

// e2bCreateNote says how many of n creates the pool served.
func e2bCreateNote(n int, booted []string, pool, image string, poolDaemon bool) string {
	served := fmt.Sprintf("%d of %d creates served from the warm pool", n-len(booted), n)
	if len(booted) > 0 {
		served += " (runs " + strings.Join(booted, ", ") + " booted instead)"
	}
	where := ""
	if poolDaemon {
		where = "a daemon with the default warm pool settings (sized by demand); "
	}
	return fmt.Sprintf("%s%s; the pool (%s %s sandboxes) is full before each run and each sandbox is killed after it, off the clock; "+
		"the body is Sandbox.create's with allowInternetAccess: false: the SDK's default (true) asks for a network sandbox, which a pool sized by demand keeps once network creates were asked for (a pinned pool never does)",
		where, served, pool, image)
}
