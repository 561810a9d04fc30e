package agent

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// children is the process-wide table of the agent's live children. An
// exit status reaches it from one of two sources: the orphan reaper, a
// single wait4(-1) loop, when ReapOrphans is on; otherwise a wait4 on the
// child's own pid. Both hand the status to deliver, which gives it to the
// exec that registered the pid; a status nobody registered (an orphan) is
// discarded.
var children = &registry{
	spawned: make(chan struct{}, 1),
	waiters: make(map[int]chan syscall.WaitStatus),
}

// registry maps the pids of running execs to the channels their exit status
// goes to.
type registry struct {
	// spawned wakes the orphan reaper after a spawn when it had no children.
	spawned chan struct{}

	// mu is held across fork+register, and by the reaper between collecting
	// a status and looking its pid up, so a child cannot exit unregistered.
	mu sync.Mutex
	// waiters and reapAll are guarded by mu.
	waiters map[int]chan syscall.WaitStatus
	reapAll bool
}

// spawn runs start, which forks a child and returns its pid, where
// RLIMIT_NPROC counts the child (forkCounted), with mu held
// and registers that pid before anyone may look for it. The returned
// channel receives the child's exit status exactly once.
func (r *registry) spawn(start func() (int, error)) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	pid, err := forkCounted(start)
	if err != nil {
		r.mu.Unlock()
		return 0, nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiters[pid] = ch
	reapAll := r.reapAll
	r.mu.Unlock()

	if reapAll {
		select {
		case r.spawned <- struct{}{}:
		default:
		}
	} else {
		go r.waitPid(pid)
	}
	return pid, ch, nil
}

// deliver hands ws to the exec waiting for pid, if any.
func (r *registry) deliver(pid int, ws syscall.WaitStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.waiters[pid]; ok {
		delete(r.waiters, pid)
		ch <- ws
	}
}

// kill sends SIGKILL to pid and to the process group it leads, as long as
// pid has not exited yet: a pid whose status was delivered may already
// belong to someone else.
func (r *registry) kill(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiters[pid]; !ok {
		return
	}
	// The group first, then the leader in case it left its group. ESRCH only
	// means there was nothing left to kill.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// signal sends sig to the process group pid leads, and to pid itself when
// it has left that group, as long as pid has not exited yet; it reports
// whether pid was still running.
func (r *registry) signal(pid int, sig syscall.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiters[pid]; !ok {
		return false
	}
	_ = syscall.Kill(-pid, sig)
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid != pid {
		_ = syscall.Kill(pid, sig)
	}
	return true
}

// waitPid waits for one child. It is used when the orphan reaper is off.
func (r *registry) waitPid(pid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: the orphan reaper, started meanwhile, collected it.
			return
		}
		r.deliver(pid, ws)
		return
	}
}

// reapLoop collects the status of every child of this process, its own
// execs and the orphans re-parented to it, for the life of the process.
func (r *registry) reapLoop() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == nil:
			r.deliver(pid, ws)
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.ECHILD):
			// No children at all, hence no descendants that could become
			// orphans: sleep until the next spawn.
			<-r.spawned
		default:
			// Not expected from wait4; do not spin on it.
			time.Sleep(10 * time.Millisecond)
		}
	}
}

var (
	reaperOnce sync.Once
	reaperErr  error
)

// reapOrphans starts the orphan reaper, once per process. A process that is
// not PID 1 (a test, or the agent under another init) first becomes a child
// subreaper, so that orphans of its descendants are re-parented to it.
func reapOrphans() error {
	reaperOnce.Do(func() {
		if os.Getpid() != 1 {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				reaperErr = fmt.Errorf("becoming a child subreaper: %w", err)
				return
			}
		}
		children.mu.Lock()
		children.reapAll = true
		children.mu.Unlock()
		go children.reapLoop()
	})
	return reaperErr
}
