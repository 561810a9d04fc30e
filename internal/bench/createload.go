package bench

// Loads of creates: a burst of creates issued at once (create-burst), with
// the warm pool on and off, and a steady rate of creates (create-steady)
// against the daemon's default pool, sized by demand. Each create is timed
// until its first exec of true has answered; the daemon's pool counters
// tell how many creates the pool served.

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// burstRounds is how many bursts of each size are issued, per pool mode.
const burstRounds = 3

// CreateLoad is the outcome of one load of creates.
type CreateLoad struct {
	// Load says what was issued ("10 at once", "2/s for 30 s"); Pool
	// whether the daemon's warm pool could serve the creates.
	Load string `json:"load"`
	Pool bool   `json:"pool"`
	// Creates is how many were issued, Rounds in how many bursts.
	Creates int `json:"creates"`
	Rounds  int `json:"rounds,omitempty"`
	// ElapsedMs is the time from the first create until the last first
	// exec answered (the median of the rounds for bursts); PerSec the
	// creates per second that makes.
	ElapsedMs float64 `json:"elapsed_ms"`
	PerSec    float64 `json:"creates_per_sec"`
	// FromPool counts the creates the pool served (its hit counter moved).
	FromPool int `json:"from_pool"`
	// Latency is each create until its first exec answered.
	Latency Stats `json:"latency"`
}

// poolDaemon is the client of the daemon with the default warm pool
// settings (Options.PoolDaemon), or of the measured daemon.
func (e *env) poolDaemon() *client.Client {
	if e.opts.PoolDaemon != nil {
		return e.opts.PoolDaemon
	}
	return e.c
}

// createBurst issues each of Options.Bursts creates at once, burstRounds
// times, with the pool off (creates of a shape the measured daemon's
// pool does not hold) and on (creates of the default shape on the daemon
// with the default pool).
func createBurst(ctx context.Context, e *env) (Result, error) {
	cold, note, err := e.createRequest(ctx, true)
	if err != nil {
		return Result{}, err
	}
	notes := []string{"pool off: " + cmp.Or(note, "the daemon keeps no warm pool of the image")}
	modes := []bool{false, true}
	if e.hasPool(e.poolDaemon()) {
		notes = append(notes, fmt.Sprintf("pool on: the daemon's default pool (sized by demand), full before each of the %d rounds", burstRounds))
	} else {
		modes = modes[:1]
		notes = append(notes, "pool on: not measured: "+e.pool.why)
	}
	var loads []CreateLoad
	for _, n := range e.opts.Bursts {
		for _, pool := range modes {
			c, req := e.c, cold
			if pool {
				c, req = e.poolDaemon(), api.CreateRequest{Image: e.opts.Image, Name: sandboxName}
			}
			e.progress("bench:   %d creates at once, pool %s…", n, onOff(pool))
			l, err := e.burst(ctx, c, req, n)
			if err != nil {
				return Result{}, fmt.Errorf("%d creates at once, pool %s: %w", n, onOff(pool), err)
			}
			l.Pool = pool
			loads = append(loads, l)
		}
	}
	notes = append(notes, "every sandbox is stopped after its round, off the clock")
	return Result{Loads: loads, Note: strings.Join(notes, "; ")}, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// burst issues n creates of req at once on c, burstRounds times, each
// followed by an exec of true; latencies are pooled over the rounds.
func (e *env) burst(ctx context.Context, c *client.Client, req api.CreateRequest, n int) (CreateLoad, error) {
	l := CreateLoad{Load: fmt.Sprintf("%d at once", n), Creates: n * burstRounds, Rounds: burstRounds}
	var samples, elapsed []time.Duration
	for range burstRounds {
		var before uint64
		if e.hasPool(c) {
			var err error
			if _, before, err = e.poolFull(ctx, c); err != nil {
				return l, err
			}
		}
		start := time.Now()
		ids, lat, last, err := createAll(ctx, c, req, n, func(int) time.Time { return start }, nil)
		took := last.Sub(start)
		e.stopAll(ctx, c, ids)
		if err != nil {
			return l, err
		}
		if e.hasPool(c) {
			_, _, after, err := e.poolStateOf(ctx, c)
			if err != nil {
				return l, err
			}
			l.FromPool += int(after - before)
		}
		samples = append(samples, lat...)
		elapsed = append(elapsed, took)
	}
	l.Latency = Summarize(samples)
	took := Summarize(elapsed).P50
	l.ElapsedMs, l.PerSec = ms(took), float64(n)/took.Seconds()
	return l, nil
}

// createAll issues n creates of req on c, the i-th at issue(i) (it waits
// until then), each followed by an exec of true, then by done with the
// sandbox's id when done is not nil; it returns the ids made (of those
// not handed to done), each create's time from its issue until its exec
// answered, and when the last exec answered. The first failure is returned
// once every create has ended.
func createAll(ctx context.Context, c *client.Client, req api.CreateRequest, n int, issue func(i int) time.Time, done func(id string)) (ids []string, lat []time.Duration, last time.Time, err error) {
	return createAllOf(ctx, c, func(int) api.CreateRequest { return req }, n, issue, done)
}

// createAllOf is createAll with the i-th create of reqOf(i).
func createAllOf(ctx context.Context, c *client.Client, reqOf func(i int) api.CreateRequest, n int, issue func(i int) time.Time, done func(id string)) (ids []string, lat []time.Duration, last time.Time, err error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards ids, lat, last and first
		first error
	)
	for i := range n {
		at := issue(i)
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			start := time.Now()
			d, id, err := createThenExec(ctx, c, reqOf(i))
			answered := time.Now()
			if id != "" && done != nil {
				done(id)
				id = ""
			}
			mu.Lock()
			defer mu.Unlock()
			if id != "" {
				ids = append(ids, id)
			}
			if err != nil {
				first = cmpErr(first, err)
				return
			}
			lat = append(lat, d+start.Sub(at))
			if answered.After(last) {
				last = answered
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return ids, lat, last, first
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// createThenExec creates a sandbox of req on c and runs true in it, and
// returns the time both took and the sandbox's id (set when the create
// succeeded).
func createThenExec(ctx context.Context, c *client.Client, req api.CreateRequest) (time.Duration, string, error) {
	start := time.Now()
	sb, err := c.Create(ctx, req)
	if err != nil {
		return 0, "", fmt.Errorf("creating a %s sandbox: %w", req.Image, err)
	}
	res, err := c.Exec(ctx, api.ExecRequest{SandboxID: sb.SandboxID, Argv: []string{"true"}, TimeoutMs: uint64(execTimeout.Milliseconds())})
	if err == nil {
		err = checkExit("true", res)
	}
	if err != nil {
		return 0, sb.SandboxID, fmt.Errorf("exec true: %w", err)
	}
	return time.Since(start), sb.SandboxID, nil
}

// stopAll stops sandboxes ids on c and waits until they are gone; a
// failure is reported by e.stops.drain.
func (e *env) stopAll(ctx context.Context, c *client.Client, ids []string) {
	s := newStopper(c, maxPendingStops)
	for _, id := range ids {
		s.stop(ctx, id)
	}
	if err := s.drain(); err != nil {
		e.stops.fail(err)
	}
}

// ratedCreates is the daemon with the default pool and how many creates
// rate per second issue in dur, or the skip of a run without a pool or
// without a create.
func (e *env) ratedCreates(rate float64, dur time.Duration) (*client.Client, int, error) {
	c := e.poolDaemon()
	n := int(rate * dur.Seconds())
	switch {
	case !e.hasPool(c):
		return nil, 0, skipf("%s", e.pool.why)
	case n < 1:
		return nil, 0, skipf("a rate of %g/s for %s issues no create", rate, dur)
	}
	return c, n, nil
}

// pooledLoad is the row of n paced creates against the pool: load says
// their rate, lat and took are pacedCreates' answer, fromPool the pool's
// hits.
func pooledLoad(load string, n int, lat []time.Duration, took time.Duration, fromPool int) CreateLoad {
	return CreateLoad{Load: load, Pool: true, Creates: n, ElapsedMs: ms(took),
		PerSec: float64(n) / took.Seconds(), FromPool: fromPool, Latency: Summarize(lat)}
}

// pacedCreates issues n creates of reqOf(i) on c at rate per second, each
// followed by an exec of true and a stop, and returns their latencies and
// the time from the first issue to the last answer.
func pacedCreates(ctx context.Context, c *client.Client, reqOf func(i int) api.CreateRequest, n int, rate float64) ([]time.Duration, time.Duration, error) {
	interval := time.Duration(float64(time.Second) / rate)
	stopper := newStopper(c, maxPendingStops)
	start := time.Now()
	_, lat, last, err := createAllOf(ctx, c, reqOf, n, func(i int) time.Time { return start.Add(time.Duration(i) * interval) },
		func(id string) { stopper.stop(ctx, id) })
	if serr := stopper.drain(); err == nil {
		err = serr
	}
	return lat, last.Sub(start), err
}

// createSteady issues creates at Options.SteadyRate per second for
// Options.SteadyDuration on the daemon with the default pool, each
// followed by an exec of true and a stop, and counts those the pool
// served. The pool starts at rest (full).
func createSteady(ctx context.Context, e *env) (Result, error) {
	c, n, err := e.ratedCreates(e.opts.SteadyRate, e.opts.SteadyDuration)
	if err != nil {
		return Result{}, err
	}
	_, before, err := e.poolFull(ctx, c)
	if err != nil {
		return Result{}, err
	}
	req := api.CreateRequest{Image: e.opts.Image, Name: sandboxName}
	lat, took, err := pacedCreates(ctx, c, func(int) api.CreateRequest { return req }, n, e.opts.SteadyRate)
	if err != nil {
		return Result{}, err
	}
	_, _, after, err := e.poolStateOf(ctx, c)
	if err != nil {
		return Result{}, err
	}
	l := pooledLoad(fmt.Sprintf("%g/s for %s", e.opts.SteadyRate, e.opts.SteadyDuration), n, lat, took, int(after-before))
	return Result{Loads: []CreateLoad{l}, Note: "the daemon's default pool (sized by demand), at rest at the start; each sandbox is stopped once its exec answered"}, nil
}
