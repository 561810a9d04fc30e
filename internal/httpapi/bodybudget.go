package httpapi

// The daemon-wide budget of request bodies (issue 38: 5): the bytes of
// bodies read and not yet answered count against one total and a share
// per owner, so that max_connections clients each sending the largest body
// cannot make the daemon hold max_connections × max body, and one owner
// cannot take the whole budget from the others.

import (
	"io"

	"github.com/hutch-dev/hutch/internal/budget"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// NewBodyBudget is the budget of request bodies: total bytes in all,
// perOwner for one owner (Options.BodyBudget).
func NewBodyBudget(total, perOwner int64) *budget.Budget {
	return budget.New(total, perOwner,
		func() error {
			return errdefs.New(errdefs.CodeCapacity, "this owner's requests in flight hold %d MiB of bodies (request_body_budget_per_owner_mb)", perOwner>>20).
				WithFix(nil, "send fewer large requests at once, or stream large files (PUT /v1/sandboxes/{id}/files/...)")
		},
		func() error {
			return errdefs.New(errdefs.CodeCapacity, "requests in flight hold %d MiB of bodies (request_body_budget_mb)", total>>20).
				WithFix(nil, "retry shortly")
		})
}

// budgetReader takes every byte it reads from the budget for owner; what
// it took is given back by release.
type budgetReader struct {
	r     io.Reader
	b     *budget.Budget
	owner string
	held  int64
}

func (br *budgetReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	if n > 0 {
		if berr := br.b.Take(br.owner, int64(n)); berr != nil {
			return 0, berr
		}
		br.held += int64(n)
	}
	return n, err
}

func (br *budgetReader) release() { br.b.Give(br.owner, br.held) }
