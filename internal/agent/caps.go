package agent

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// The agent's threads share RLIMIT_NPROC with every process of their user,
// and the Go runtime dies when it fails to create a thread: a fork bomb in
// the sandbox would end the agent. The gVisor runtime therefore gives the
// agent CAP_SYS_RESOURCE, which exempts its threads from the limit, outside
// its bounding set, so that no process it starts can ever hold it (execve
// grants root no more than the bounding set). It also makes the agent's
// permitted set larger than any such process's, which is what refuses
// them ptrace access to it.
//
// A process the agent starts must still count against the limit like any
// other, so that a start during a fork bomb fails with EAGAIN instead of
// pushing the sandbox past its host task limit: the fork runs on a thread
// that drops the capability from its effective and inheritable sets for
// that moment (capabilities belong to a thread, not a process), and the
// process inherits that thread's sets: after its execve it holds nothing
// outside the bounding set.

// forkCaps are the capability sets of a thread while it forks (counted)
// and after (held).
type forkCaps struct {
	held, counted [2]unix.CapUserData
}

// dropping returns the calling thread's sets with capability dropped from
// the effective and inheritable ones while forking, or nil when it is not
// effective. After the fork the thread gets its effective set back, not
// its inheritable one: a capability outside the bounding set, as the
// agent's is, cannot be made inheritable again (capset fails, and the
// thread would have to end with its goroutine: a thread created and one
// ended per exec), and inheritable only matters across an execve, which
// the agent's threads do not make.
func dropping(capability uint) *forkCaps {
	var c forkCaps
	word, bit := capability/32, uint32(1)<<(capability%32)
	if err := capget(&c.held); err != nil || c.held[word].Effective&bit == 0 {
		return nil
	}
	c.held[word].Inheritable &^= bit
	c.counted = c.held
	c.counted[word].Effective &^= bit
	return &c
}

// agentForkCaps drops CAP_SYS_RESOURCE for a fork; nil when the agent
// does not hold it (a plain fork is counted already).
var agentForkCaps = sync.OnceValue(func() *forkCaps { return dropping(unix.CAP_SYS_RESOURCE) })

// forkCounted runs fork, which creates a process, where RLIMIT_NPROC
// applies to it.
func forkCounted(fork func() (int, error)) (int, error) { return agentForkCaps().run(fork) }

// run runs fork on a thread with the counted sets, or as it is on a nil c.
func (c *forkCaps) run(fork func() (int, error)) (int, error) {
	if c == nil {
		return fork()
	}
	// Locked, no other goroutine runs on this thread while it lacks the
	// capability, and the runtime creates threads from its template
	// thread, not from this one.
	runtime.LockOSThread()
	if err := capset(&c.counted); err != nil {
		runtime.UnlockOSThread()
		return 0, fmt.Errorf("dropping a capability to fork: %w", err)
	}
	pid, err := fork()
	if capset(&c.held) == nil {
		runtime.UnlockOSThread()
	}
	// Otherwise the thread stays locked, and ends with this goroutine.
	return pid, err
}

// capget reads the calling thread's capability sets.
func capget(sets *[2]unix.CapUserData) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capget(&hdr, &sets[0])
}

// capset sets the calling thread's capability sets.
func capset(sets *[2]unix.CapUserData) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capset(&hdr, &sets[0])
}
