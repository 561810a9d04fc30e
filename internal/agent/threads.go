package agent

import (
	"runtime"
	"sync"
)

// ReservedThreads is how many OS threads the agent starts up front.
const ReservedThreads = 32

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
