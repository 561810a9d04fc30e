package functions

// Registration: every function of the table is added by add (one value)
// or addStream (a stream of events), which give it the same wrapper:
// strict decoding, the fields a transport took from a URL (Params), the
// function's options, and one report to the observer per call.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Timeouts says what a function's timeout is to its caller.
type Timeouts int

const (
	// TimeoutIsResult: a timed-out call succeeds; its result says so
	// (timed_out) and holds what was done until then. The default.
	TimeoutIsResult Timeouts = iota
	// TimeoutIsError: a timed-out call fails with S200.
	TimeoutIsError
)

// TimedOut is a result that can report a timeout (api.ExecResponse).
type TimedOut interface {
	TimedOutAfter() (ms uint64, timedOut bool)
}

// option is a setting of one registration.
type option struct {
	timeouts Timeouts
	// observeAs is the id calls are reported under; "" is the function's.
	observeAs string
	// response is the type of the result when the function's Go result
	// is not it (an any that may be a *Content).
	response reflect.Type
}

// Option sets an option of a registration.
type Option func(*option)

// WithTimeouts sets what a timeout of the function is; the function's
// result must implement TimedOut (checked when it is registered).
func WithTimeouts(ts Timeouts) Option { return func(o *option) { o.timeouts = ts } }

// ObservedAs reports the function's calls under the id of the function it
// is a variant of, so that one operation keeps one name in the metrics.
func ObservedAs(id string) Option { return func(o *option) { o.observeAs = id } }

// Describes says the function's result is a T (or a *Content of one),
// for a function whose Go result is any.
func Describes[T any]() Option { return func(o *option) { o.response = reflect.TypeFor[T]() } }

// add registers a function that returns one value.
func add[Req, Resp any](t *Table, id, desc string, fn func(context.Context, Req) (Resp, error), opts ...Option) {
	o := options[Resp](id, opts)
	observed := cmp.Or(o.observeAs, id)
	typed := func(ctx context.Context, req Req) (any, error) {
		resp, err := fn(ctx, req)
		if err == nil && o.timeouts == TimeoutIsError {
			err = timeoutError(any(resp).(TimedOut))
		}
		t.observe(observed, err)
		return resp, err
	}
	register(t, Function{ID: id, Description: desc, Response: cmp.Or(o.response, reflect.TypeFor[Resp]())}, observed, typed)
}

// addStream registers a streaming function: fn sends its events through
// emit and returns the final value. Errors before the stream starts
// (decoding, params) are returned by the call itself.
func addStream[Req, Resp any](t *Table, id, desc string, fn func(context.Context, Req, Emitter) (Resp, error)) {
	typed := func(ctx context.Context, req Req) (any, error) {
		return NewStream(ctx, func(ctx context.Context, emit Emitter) (any, error) {
			return fn(ctx, req, emit)
		}, func(err error) { t.observe(id, err) }), nil
	}
	register(t, Function{ID: id, Description: desc, Streams: true, Response: reflect.TypeFor[Resp]()}, id, typed)
}

// register completes f with its handlers over typed and adds it; a
// request it refuses is reported under observed.
func register[Req any](t *Table, f Function, observed string, typed func(context.Context, Req) (any, error)) {
	id := f.ID
	typed = admitted(t, id, typed) // issue 38: quotas
	f.Request = reflect.TypeFor[Req]()
	_, f.TakesBody = any(new(Req)).(api.BodyTaker)
	_, f.GivesBody = any(new(Req)).(api.BodyGiver)
	if tool, ok := tools[id]; ok {
		f.Tool = &tool
	}
	typed = forwarded(t, f, typed) // issue 36: to the node holding its sandbox
	f.Handler = func(ctx context.Context, payload json.RawMessage, p Params) (any, error) {
		var req Req
		if err := Decode(payload, &req); err != nil {
			t.observe(observed, err)
			return nil, err
		}
		if err := p.apply(&req, payload); err != nil {
			t.observe(observed, err)
			return nil, err
		}
		return typed(ctx, req)
	}
	f.typed = func(ctx context.Context, req any) (any, error) {
		r, ok := req.(Req)
		if !ok {
			return nil, errdefs.New(errdefs.CodeInternal, "%s takes a %T, not a %T", id, r, req)
		}
		return typed(ctx, r)
	}
	if _, dup := t.fns[id]; dup {
		panic("functions: " + id + " registered twice")
	}
	t.fns[id] = f
}

// options collects opts of function id, whose result is a Resp.
func options[Resp any](id string, opts []Option) option {
	var o option
	for _, set := range opts {
		set(&o)
	}
	var zero Resp
	if _, ok := any(zero).(TimedOut); o.timeouts != TimeoutIsResult && !ok {
		panic(fmt.Sprintf("functions: %s has a timeout option but its result %T cannot time out", id, zero))
	}
	return o
}

// timeoutError is S200 when r timed out, else nil.
func timeoutError(r TimedOut) error {
	ms, timedOut := r.TimedOutAfter()
	if !timedOut {
		return nil
	}
	return errdefs.New(errdefs.CodeExecTimeout, "exec timed out after %dms", ms).
		WithFix(map[string]any{"timeout_ms": ms * 2}, "raise timeout_ms or split the work")
}

var _ TimedOut = api.ExecResponse{}
