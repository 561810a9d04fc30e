package bench

// The E2B scenarios (issue 22): commands.run('true') through E2B's envd
// against hutch's own REST exec in the same sandbox, and Sandbox.create
// from the warm pool. They speak the wire the stock SDKs speak
// (e2bclient.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// e2bCommand is what both sides of e2b-exec-true run: commands.run's
// /bin/bash -l -c around the command.
var e2bCommand = []string{"/bin/bash", "-l", "-c", "true"}

// e2bExecTrue times commands.run('true') through E2B's envd and, in the
// same sandbox and rounds, hutch's REST exec of the same /bin/bash -l -c
// true; which of the two goes first alternates from round to round. The
// sandbox is created and killed through the E2B API, off the clock.
func e2bExecTrue(ctx context.Context, e *env) (Result, error) {
	x := newE2BClient(e.c, e.opts)
	defer x.close()
	sb, err := x.create(ctx, e2bCreateBody(e.opts.Image))
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if err := x.killAndWait(ctx, e.c, sb.ID); err != nil {
			e.stops.fail(err)
		}
	}()
	viaE2B := func() (d, started time.Duration, err error) {
		started, d, err = x.run(ctx, sb, e2bCommand[len(e2bCommand)-1])
		return d, started, err
	}
	viaREST := func() (time.Duration, error) {
		start := time.Now()
		err := httpExec(ctx, e, sb.ID, e2bCommand...)
		var env *api.ErrorEnvelope
		if errors.As(err, &env) && env.Code == string(errdefs.CodeNotFound) {
			err = fmt.Errorf("%w (the REST API does not see the E2B key's sandbox: give the E2B key and HUTCH_TOKEN one owner)", err)
		}
		return time.Since(start), err
	}
	var e2bs, starts, rests, added []time.Duration
	// One untimed run of each finds out a path that does not work.
	for i := -1; i < e.opts.Warmup+e.opts.Runs; i++ {
		var d, started, r time.Duration
		if i%2 == 0 {
			d, started, err = viaE2B()
			if err == nil {
				r, err = viaREST()
			}
		} else {
			r, err = viaREST()
			if err == nil {
				d, started, err = viaE2B()
			}
		}
		if err != nil {
			return Result{}, err
		}
		if i >= e.opts.Warmup {
			e2bs, starts, rests = append(e2bs, d), append(starts, started), append(rests, r)
			added = append(added, d-r)
		}
	}
	res := latencyResult(e2bs)
	base := latencyResult(rests)
	base.Name, base.Title = "rest-exec-bash", "hutch REST exec of /bin/bash -l -c true, same sandbox and rounds"
	res.Baselines = []Result{base}
	res.Note = e2bExecNote(*res.Latency, *base.Latency, Summarize(added), Summarize(starts))
	return res, nil
}

// e2bExecNote says how commands.run compares with the REST exec.
func e2bExecNote(e2b, rest, added, starts Stats) string {
	return fmt.Sprintf("E2B − REST: p50 %s ms (%s vs %s), p90 %s ms (%s vs %s); median of the per-round differences %s ms. "+
		"Both run /bin/bash -l -c true in one sandbox (bash -l costs both the same), in rounds that alternate which goes first. "+
		"The difference is how hutch's envd serves commands.run: a background process (sandbox::process::start, answered with the pid "+
		"= the start event, p50 %s ms after the call), followed through sandbox::process::output to its end over a Connect stream "+
		"(JSON codec, HTTP/1.1), where the REST exec is one sandbox::exec call",
		signedMs(e2b.P50-rest.P50), fmtMs(e2b.P50), fmtMs(rest.P50), signedMs(e2b.P90-rest.P90), fmtMs(e2b.P90), fmtMs(rest.P90),
		signedMs(added.P50), fmtMs(starts.P50))
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
		"the body is Sandbox.create's with allowInternetAccess: false: the SDK's default (true) asks for a network sandbox, which no pool sandbox is, so it boots",
		where, served, pool, image)
}
