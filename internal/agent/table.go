package agent

import (
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// table is the agent's process table: live processes and exited ones it
// remembers, at most max in all (reserved starts included). Tied
// processes leave it when they exit; detached ones stay until the table
// needs their room, oldest first.
type table struct {
	max int

	// mu guards the fields below.
	mu       sync.Mutex
	procs    map[int]*proc
	reserved int
}

func newTable(max int) *table { return &table{max: max, procs: make(map[int]*proc)} }

// reserve makes room for one more process, dropping the oldest exited one
// when the table is full; it fails with ResourceExhausted when every entry
// is live. Call add or unreserve after.
func (t *table) reserve() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.procs)+t.reserved >= t.max {
		var oldest *proc
		for _, p := range t.procs {
			if p.hasExited() && (oldest == nil || p.started.Before(oldest.started)) {
				oldest = p
			}
		}
		if oldest == nil {
			return status.Errorf(codes.ResourceExhausted, "the agent runs %d processes already", len(t.procs))
		}
		delete(t.procs, oldest.pid)
	}
	t.reserved++
	return nil
}

// unreserve gives a reservation back after a failed start.
func (t *table) unreserve() {
	t.mu.Lock()
	t.reserved--
	t.mu.Unlock()
}

// add turns a reservation into p's entry, unless p is tied and has
// exited already (exited ran first). A pid the kernel reused replaces the
// exited process that had it.
func (t *table) add(p *proc) {
	t.mu.Lock()
	t.reserved--
	if !p.tied || !p.hasExited() {
		t.procs[p.pid] = p
	}
	t.mu.Unlock()
}

// exited is told that p has exited: a tied process leaves the table.
func (t *table) exited(p *proc) {
	if !p.tied {
		return
	}
	t.mu.Lock()
	if t.procs[p.pid] == p {
		delete(t.procs, p.pid)
	}
	t.mu.Unlock()
}

// get returns the process pid, or NotFound.
func (t *table) get(pid int32) (*proc, error) {
	t.mu.Lock()
	p, ok := t.procs[int(pid)]
	t.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no process %d", pid)
	}
	return p, nil
}

// list describes every process of the table, oldest first.
func (t *table) list() []*agentv1.ProcessInfo {
	t.mu.Lock()
	ps := make([]*proc, 0, len(t.procs))
	for _, p := range t.procs {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	slices.SortFunc(ps, func(a, b *proc) int { return a.started.Compare(b.started) })
	out := make([]*agentv1.ProcessInfo, len(ps))
	for i, p := range ps {
		out[i] = p.info()
	}
	return out
}

// hasExited reports whether p has exited.
func (p *proc) hasExited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// killAll kills the process group of every live process of the table.
func (t *table) killAll() {
	t.mu.Lock()
	ps := make([]*proc, 0, len(t.procs))
	for _, p := range t.procs {
		ps = append(ps, p)
	}
	t.mu.Unlock()
	for _, p := range ps {
		if !p.hasExited() {
			p.kill()
		}
	}
}
