package engineapi

import (
	"github.com/hutch-dev/hutch/internal/budget"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// channelBudget accounts the bytes written into stream channels and not
// yet read, in all and per owner, so that writers without readers cannot
// make the daemon hold more than the configured bounds. Lock order:
// channel.mu, then the budget's.
type channelBudget struct{ b *budget.Budget }

func newBudget(total, perOwner int64) *channelBudget {
	return &channelBudget{budget.New(total, perOwner,
		func() error {
			return errdefs.New(errdefs.CodeCapacity, "this owner's stream channels hold %d MiB written and not yet read (channel_buffer_per_owner_mb)", perOwner>>20).
				WithFix(nil, "read the channels you write into, or close the ones nobody reads")
		},
		func() error {
			return errdefs.New(errdefs.CodeCapacity, "stream channels hold %d MiB written and not yet read (channel_buffer_mb)", total>>20).
				WithFix(nil, "retry once other streams have been read")
		})}
}

// take reserves n bytes for owner, or says which bound they would pass.
func (b *channelBudget) take(owner string, n int64) error { return b.b.Take(owner, n) }

// give returns n bytes of owner's.
func (b *channelBudget) give(owner string, n int64) { b.b.Give(owner, n) }
