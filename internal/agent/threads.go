package agent

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// ReservedThreads is the most OS threads the agent starts up front.
const ReservedThreads = 32

// ThreadReserve is how many threads to reserve under the process's
// RLIMIT_NPROC: the agent's threads count against it with every task of
// its user, so it takes at most a quarter of it.
func ThreadReserve() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return ReservedThreads
	}
	return reserveUnder(rl.Cur)
}

// reserveUnder is the reserve under an RLIMIT_NPROC of nproc.
func reserveUnder(nproc uint64) int {
	if nproc == unix.RLIM_INFINITY {
		return ReservedThreads
	}
	return int(min(uint64(ReservedThreads), nproc/4))
}

// ReserveThreads makes the Go runtime start n OS threads now and keep
// them idle for later. Code in the sandbox can take every task the sandbox
// may have (a fork bomb), and the Go runtime cannot survive a thread it
// fails to create (fatal error: newosproc), but it reuses idle threads
// before it creates one: with a reserve, the agent goes on serving.
func ReserveThreads(n int) {
	var locked, release sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for range n {
		go func() {
			// A locked goroutine that blocks holds its thread, so n of
			// them need n threads at once.
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	release.Done()
}
