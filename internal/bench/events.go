package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// eventsOverhead measures the exec throughput with nothing reading the
// event log, and with an SSE subscriber of every event and a webhook of
// the exec events attached (its receiver run by the bench, on loopback),
// on the same sandboxes, in the order bare, attached, attached, bare so
// that a drift of the machine weighs on both alike; and how many events a
// second the daemon recorded meanwhile. A daemon that will not add a
// webhook for the caller (not an operator) is measured with the
// subscriber only. The subscriber and the receiver run on this host: what
// they cost is counted too.
func eventsOverhead(ctx context.Context, e *env) (Result, error) {
	ids, err := e.createSandboxes(ctx, e.opts.Sandboxes, nil)
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	run := func(ctx context.Context, id string) error {
		_, err := e.exec(ctx, id, "true")
		return err
	}
	var bare, with []Result
	var recorded, hooked int64
	var note string
	for _, attach := range []bool{false, true, true, false} {
		if !attach {
			res, err := throughput(ctx, e.opts, ids, run)
			if err != nil {
				return Result{}, err
			}
			bare = append(bare, res)
			continue
		}
		res, n, h, why, err := e.attached(ctx, func() (Result, error) { return throughput(ctx, e.opts, ids, run) })
		if err != nil {
			return Result{}, err
		}
		with, recorded, hooked, note = append(with, res), recorded+n, hooked+h, why
	}
	out, base := merged(with), merged(bare)
	elapsed := out.Throughput.Elapsed.Seconds()
	out.Note = fmt.Sprintf("%s%.0f events/s recorded and streamed (%d in %.1f s); the webhook received %d; "+
		"throughput %.1f%% of the runs with nothing attached (%.1f vs %.1f execs/s; order bare, attached, attached, bare)",
		note, float64(recorded)/elapsed, recorded, elapsed, hooked,
		100*out.Throughput.PerSec/base.Throughput.PerSec, out.Throughput.PerSec, base.Throughput.PerSec)
	base.Name, base.Title = "nothing-attached", "the same, nothing attached"
	out.Baselines = []Result{base}
	return out, nil
}

// merged is the throughput of runs taken together: their execs over their
// time, their latencies and CPU of the first (the CPU per exec of each run
// is alike).
func merged(runs []Result) Result {
	out := runs[0]
	t := *out.Throughput
	for _, r := range runs[1:] {
		t.Execs += r.Throughput.Execs
		t.Elapsed += r.Throughput.Elapsed
		t.Latency = Summarize(append(t.Latency.Samples, r.Throughput.Latency.Samples...))
	}
	t.PerSec = float64(t.Execs) / t.Elapsed.Seconds()
	out.Throughput = &t
	return out
}

// attached runs measure with an SSE subscriber of every event and a
// webhook of the exec events attached, and counts the events streamed
// and delivered meanwhile. why says what was left out.
func (e *env) attached(ctx context.Context, measure func() (Result, error)) (res Result, streamedN, hookedN int64, why string, err error) {
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	var streamed, hooked atomic.Int64
	subDone := make(chan error, 1)
	go func() {
		subDone <- e.c.StreamEvents(subCtx, api.EventsRequest{After: api.AfterNow}, func(api.EventRecord) error {
			streamed.Add(1)
			return nil
		})
	}()
	// The stream is open once a published marker comes through it.
	for streamed.Load() == 0 {
		if _, err := e.c.PublishEvent(ctx, api.PublishRequest{Topic: "bench.attached"}); err != nil {
			return Result{}, 0, 0, "", err
		}
		select {
		case err := <-subDone:
			return Result{}, 0, 0, "", fmt.Errorf("the event subscriber: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	stopHook, err := e.attachWebhook(ctx, &hooked)
	switch {
	case errdefs.Is(err, errdefs.CodeOperatorOnly):
		why, stopHook = "no webhook: the caller is not an operator; ", func() error { return nil }
	case err != nil:
		return Result{}, 0, 0, "", err
	}
	before := streamed.Load()
	res, err = measure()
	streamedN = streamed.Load() - before
	err = errors.Join(err, stopHook())
	stopSub()
	if subErr := <-subDone; subErr != nil && !errors.Is(subErr, context.Canceled) {
		err = errors.Join(err, fmt.Errorf("the event subscriber: %w", subErr))
	}
	return res, streamedN, hooked.Load(), why, err
}

// attachWebhook adds a webhook of the exec events whose receiver, on a
// loopback port of the bench, counts its deliveries in n; stop deletes it
// and stops the receiver.
func (e *env) attachWebhook(ctx context.Context, n *atomic.Int64) (stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) })}
	go func() { _ = srv.Serve(ln) }()
	hook, err := e.c.CreateWebhook(ctx, api.WebhookCreateRequest{URL: "http://" + ln.Addr().String() + "/hook",
		Events: []string{"exec.*"}, Secret: "hutch-bench-webhook-secret"})
	if err != nil {
		srv.Close()
		return nil, err
	}
	return func() error {
		defer srv.Close()
		if _, err := e.c.DeleteWebhook(context.WithoutCancel(ctx), hook.WebhookID); err != nil {
			return fmt.Errorf("deleting the bench's webhook %s: %w", hook.WebhookID, err)
		}
		return nil
	}, nil
}
