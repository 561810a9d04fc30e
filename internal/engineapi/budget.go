package engineapi

import (
	"sync"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// budget accounts the bytes written into stream channels and not yet read,
// in all and per owner, so that writers without readers cannot make the
// daemon hold more than the configured bounds.
type budget struct {
	total, perOwner int64

	mu sync.Mutex
	// The fields below are guarded by mu. Lock order: channel.mu, then
	// budget.mu.
	used   int64
	owners map[string]int64
}

func newBudget(total, perOwner int64) *budget {
	return &budget{total: total, perOwner: perOwner, owners: map[string]int64{}}
}

// take reserves n bytes for owner, or says which bound they would pass.
func (b *budget) take(owner string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.owners[owner]+n > b.perOwner:
		return errdefs.New(errdefs.CodeCapacity, "this owner's stream channels hold %d MiB written and not yet read (channel_buffer_per_owner_mb)", b.perOwner>>20).
			WithFix(nil, "read the channels you write into, or close the ones nobody reads")
	case b.used+n > b.total:
		return errdefs.New(errdefs.CodeCapacity, "stream channels hold %d MiB written and not yet read (channel_buffer_mb)", b.total>>20).
			WithFix(nil, "retry once other streams have been read")
	}
	b.owners[owner] += n
	b.used += n
	return nil
}

// give returns n bytes of owner's.
func (b *budget) give(owner string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.owners[owner] -= n; b.owners[owner] <= 0 {
		delete(b.owners, owner)
	}
}
