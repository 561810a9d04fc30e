package procsvc

import (
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// procBook is what the service knows of the processes hutch started in a
// sandbox beyond the agent's table: each background process's tag and
// kind, and how many background processes and terminals run, against the
// daemon's limits. An exited entry stays (for its tag) until
// maxExitedTags newer ones exited.
type procBook struct {
	mu      sync.Mutex
	entries map[int]*procEntry
	// running and ptys count live background processes and terminals,
	// reservations included.
	running, ptys int
	// exitedOrder is the pids of exited entries, oldest first.
	exitedOrder []int
	// started is closed (and replaced) when a process is added.
	started chan struct{}
	// ended is the sandbox's (Handle.Ended): a book is its sandbox's.
	ended <-chan struct{}
}

// news is closed when the next background process is added.
func (b *procBook) news() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = make(chan struct{})
	}
	return b.started
}

// procEntry is one background process of the book.
type procEntry struct {
	pid    int
	tag    string
	pty    bool
	exited bool
	// release frees the process's place in the limits, once.
	release func()
}

// maxExitedTags bounds the exited processes whose tags are kept.
const maxExitedTags = 256

// reserve takes a place for a background process (a terminal when pty),
// unless that would pass maxProcs or maxPtys; unreserve gives it back,
// once, however often it is called.
func (b *procBook) reserve(pty bool, maxProcs, maxPtys int) (ok bool, unreserve func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running >= maxProcs || pty && b.ptys >= maxPtys {
		return false, nil
	}
	b.running++
	if pty {
		b.ptys++
	}
	return true, sync.OnceFunc(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.running--
		if pty {
			b.ptys--
		}
	})
}

// add records a started background process holding a reservation.
func (b *procBook) add(e procEntry, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = make(map[int]*procEntry)
	}
	e.release = release
	b.entries[e.pid] = &e
	if b.started != nil {
		close(b.started)
		b.started = nil
	}
}

// exited marks background process pid as exited and frees its place.
func (b *procBook) exited(pid int) {
	if e := b.markExited(pid); e != nil {
		e.release()
	}
}

// markExited marks pid's entry exited, forgetting the oldest exited ones
// past maxExitedTags; nil when it has no entry or had exited already.
func (b *procBook) markExited(pid int) *procEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[pid]
	if !ok || e.exited {
		return nil
	}
	e.exited = true
	b.exitedOrder = append(b.exitedOrder, pid)
	if len(b.exitedOrder) > maxExitedTags {
		old := b.exitedOrder[0]
		b.exitedOrder = b.exitedOrder[1:]
		if o := b.entries[old]; o != nil && o.exited {
			delete(b.entries, old)
		}
	}
	return e
}

// tag is the tag of process pid, "" without one.
func (b *procBook) tag(pid int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[pid]; ok {
		return e.tag
	}
	return ""
}

// describe is the agent's description of a process with its tag.
func (b *procBook) describe(p *agentv1.ProcessInfo) api.ProcessInfo {
	info := api.ProcessInfo{
		Pid:         int(p.GetPid()),
		Argv:        p.GetArgv(),
		Tag:         b.tag(int(p.GetPid())),
		State:       api.ProcessRunning,
		StartedAt:   time.Unix(0, p.GetStartUnixNs()).UTC().Format(time.RFC3339Nano),
		Pty:         p.GetPty(),
		Stdin:       p.GetOpenStdin(),
		StdoutBytes: p.GetStdoutEnd(),
		StderrBytes: p.GetStderrEnd(),
	}
	if x := p.GetExited(); x != nil {
		info.State = api.ProcessExited
		info.TimedOut = x.GetTimedOut()
		info.OOMKilled = x.GetOomKilled()
		if !x.GetTimedOut() {
			code := int(x.GetExitCode())
			info.ExitCode = &code
		}
		if sig := x.GetSignal(); sig > 0 {
			info.Signal = SignalName(sig)
		}
		end := time.Unix(0, p.GetStartUnixNs()).Add(time.Duration(x.GetDurationUs()) * time.Microsecond)
		info.EndedAt = end.UTC().Format(time.RFC3339Nano)
	}
	return info
}
