package sandbox

// Per-owner caps: max_sandboxes_per_owner bounds an owner's live sandboxes
// plus its creates in progress, max_concurrent_exec_per_owner its execs in
// flight across all of its sandboxes, so that one owner cannot take every
// slot of a shared daemon. Both answer S400; 0 turns a cap off.

import (
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// ownerUse counts, per owner, the creates in progress and the execs in
// flight. Guarded by Manager.mu; an owner's entry goes at zero, so the maps
// hold at most the owners with work under way.
type ownerUse struct {
	creating map[string]int
	execs    map[string]int
}

// reserve counts one create in progress of owner.
func (u *ownerUse) reserve(owner string) { u.creating = inc(u.creating, owner) }

// release ends one create in progress of owner.
func (u *ownerUse) release(owner string) { dec(u.creating, owner) }

// inc adds one to counts[key], making the map if needed, and returns it.
func inc(counts map[string]int, key string) map[string]int {
	if counts == nil {
		counts = map[string]int{}
	}
	counts[key]++
	return counts
}

// dec takes one from counts[key], deleting the entry at zero.
func dec(counts map[string]int, key string) {
	if counts[key]--; counts[key] <= 0 {
		delete(counts, key)
	}
}

// roomLocked refuses (S400) a create of owner that would pass limit,
// max_sandboxes_per_owner, counting its live sandboxes among sandboxes
// (the Manager's). Manager.mu must be held.
func (u *ownerUse) roomLocked(owner string, limit int, sandboxes map[string]*sandbox) error {
	if limit == 0 {
		return nil
	}
	n := u.creating[owner]
	for _, sb := range sandboxes {
		if sb.rec.Owner == owner && !sb.isStopped() {
			n++
		}
	}
	if n < limit {
		return nil
	}
	return errdefs.New(errdefs.CodeCapacity, "capacity reached for this owner: %d of its sandboxes are live or being created (max_sandboxes_per_owner=%d)", n, limit).
		WithFix(nil, "stop one of your sandboxes, or ask the operator to raise max_sandboxes_per_owner")
}

// acquireExec takes an exec slot of owner, or refuses (S400) one that
// would pass max_concurrent_exec_per_owner; release gives it back.
func (m *Manager) acquireExec(owner string) (release func(), err error) {
	limit := m.cfg.MaxConcurrentExecPerOwner
	if limit == 0 {
		return func() {}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.owners.execs[owner]; n >= limit {
		return nil, errdefs.New(errdefs.CodeCapacity, "capacity reached for this owner: %d of its execs are in flight (max_concurrent_exec_per_owner=%d)", n, limit).
			WithFix(nil, "wait for one of your execs to finish, or ask the operator to raise max_concurrent_exec_per_owner")
	}
	m.owners.execs = inc(m.owners.execs, owner)
	return func() {
		m.mu.Lock()
		dec(m.owners.execs, owner)
		m.mu.Unlock()
	}, nil
}
