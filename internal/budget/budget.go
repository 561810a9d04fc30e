// Package budget accounts bytes a daemon holds for its callers, in all and
// per owner (issue 38: every buffer bounded), so that no owner can make the
// daemon hold more than its share and all of them together no more than
// the total: the engine's stream channels and the REST API's request
// bodies each have one.
package budget

import "sync"

// Budget is a byte budget with a total bound and a bound per owner. It is
// safe for concurrent use.
type Budget struct {
	total, perOwner int64
	// ownerFull and totalFull make the error of a Take past each bound.
	ownerFull, totalFull func() error

	mu sync.Mutex
	// used and owners are guarded by mu.
	used   int64
	owners map[string]int64
}

// New returns a budget of total bytes, perOwner for each owner; a Take past
// a bound returns ownerFull's or totalFull's error.
func New(total, perOwner int64, ownerFull, totalFull func() error) *Budget {
	return &Budget{total: total, perOwner: perOwner, ownerFull: ownerFull, totalFull: totalFull, owners: map[string]int64{}}
}

// Take reserves n bytes for owner, or returns the error of the bound they
// would pass (the owner's first).
func (b *Budget) Take(owner string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.owners[owner]+n > b.perOwner:
		return b.ownerFull()
	case b.used+n > b.total:
		return b.totalFull()
	}
	b.owners[owner] += n
	b.used += n
	return nil
}

// Give returns n bytes of owner's.
func (b *Budget) Give(owner string, n int64) {
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

// Used reports the bytes held in all.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
