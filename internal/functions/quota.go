package functions

// Quotas (issue 38): the table asks its Quota before every call, so that
// every transport's creates are counted the same way.

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Quota keeps owners within their limits (internal/quota).
type Quota interface {
	// Admit refuses (S401) a call of function id on req, a typed request,
	// that would take the caller's owner past a limit; otherwise done,
	// called once the call has returned, ends what it counted for it.
	Admit(ctx context.Context, id string, req any) (done func(), err error)
	// Usage reports the caller's use against its limits.
	Usage(ctx context.Context, req api.QuotaRequest) (api.QuotaResponse, error)
}

// registerQuota adds sandbox::quota, when the table has a Quota.
func registerQuota(t *Table) {
	if q := t.deps.Quota; q != nil {
		add(t, api.FnQuota, "Show the caller's use against its quota (hutch extension)", q.Usage)
	}
}

// admitted runs typed past the table's Quota, when it has one.
func admitted[Req any](t *Table, id string, typed func(context.Context, Req) (any, error)) func(context.Context, Req) (any, error) {
	q := t.deps.Quota
	if q == nil {
		return typed
	}
	return func(ctx context.Context, req Req) (any, error) {
		done, err := q.Admit(ctx, id, req)
		if err != nil {
			t.observe(id, err)
			return nil, err
		}
		defer done()
		return typed(ctx, req)
	}
}
