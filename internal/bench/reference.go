package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// pipeBatch is how many pipe round trips make one sample of the host
// reference: one round trip (~0.1 ms) is too short to time alone.
const pipeBatch = 50

// HostRef is how fast the host itself is at one moment of the run, by the
// two costs an exec is made of: starting a process, and waking another
// process through a pipe. The bench measures it on its own machine (the
// client's), at the start and at the end of the run.
type HostRef struct {
	// Spawn is fork+exec+wait of /bin/true (clone with CLONE_VFORK, as
	// posix_spawn does), one sample per process.
	Spawn Stats `json:"spawn"`
	// PipeRoundTrip is one byte written to a cat process through a pipe
	// and read back through another; each sample is the mean of pipeBatch
	// round trips.
	PipeRoundTrip Stats `json:"pipe_round_trip"`
	// Err says why the reference could not be measured.
	Err string `json:"error,omitempty"`
}

// Reference is the host reference at the start and at the end of a run.
type Reference struct {
	Start HostRef `json:"start"`
	End   HostRef `json:"end"`
}

// measureHost measures the host reference: warmup untimed then runs timed
// samples of each of its figures, like any scenario.
func measureHost(warmup, runs int) HostRef {
	var ref HostRef
	spawn, err := hostSpawns(warmup, runs)
	if err == nil {
		ref.Spawn = Summarize(spawn)
		var rt []time.Duration
		rt, err = pipeRoundTrips(warmup, runs)
		ref.PipeRoundTrip = Summarize(rt)
	}
	if err != nil {
		ref.Err = err.Error()
	}
	return ref
}

// hostSpawns times warmup + runs starts of /bin/true to its exit and
// returns the timed ones.
func hostSpawns(warmup, runs int) ([]time.Duration, error) {
	path, err := exec.LookPath("true")
	if err != nil {
		return nil, fmt.Errorf("host spawn: %w", err)
	}
	samples := make([]time.Duration, 0, runs)
	for i := range warmup + runs {
		start := time.Now()
		pid, err := syscall.ForkExec(path, []string{path}, &syscall.ProcAttr{})
		if err != nil {
			return nil, fmt.Errorf("host spawn of %s: %w", path, err)
		}
		var ws syscall.WaitStatus
		if _, err := wait4(pid, &ws); err != nil {
			return nil, fmt.Errorf("host spawn of %s: waiting: %w", path, err)
		}
		d := time.Since(start)
		if !ws.Exited() || ws.ExitStatus() != 0 {
			return nil, fmt.Errorf("host spawn: %s ended with wait status %#x", path, uint32(ws))
		}
		if i >= warmup {
			samples = append(samples, d)
		}
	}
	return samples, nil
}

// pipeRoundTrips times warmup + runs batches of pipeBatch one-byte round
// trips through a cat process and returns the timed batches' means. The
// bench's side makes blocking read and write system calls on one OS
// thread, so that neither Go's network poller nor its scheduler is part of
// what is measured: only two host processes waking each other.
func pipeRoundTrips(warmup, runs int) (samples []time.Duration, err error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
	var to, from [2]int
	if err := syscall.Pipe2(to[:], syscall.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
	if err := syscall.Pipe2(from[:], syscall.O_CLOEXEC); err != nil {
		closeFds(to[:]...)
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
	pid, err := syscall.ForkExec(cat, []string{cat}, &syscall.ProcAttr{Files: []uintptr{uintptr(to[0]), uintptr(from[1])}})
	closeFds(to[0], from[1])
	if err != nil {
		closeFds(to[1], from[0])
		return nil, fmt.Errorf("pipe round trip: starting %s: %w", cat, err)
	}
	defer func() {
		// cat ends at the end of its input.
		closeFds(to[1], from[0])
		var ws syscall.WaitStatus
		if _, werr := wait4(pid, &ws); werr != nil && err == nil {
			err = fmt.Errorf("pipe round trip: waiting for %s: %w", cat, werr)
		}
	}()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := []byte{'x'}
	samples = make([]time.Duration, 0, runs)
	for i := range warmup + runs {
		start := time.Now()
		for range pipeBatch {
			if err := roundTrip(to[1], from[0], b); err != nil {
				return nil, fmt.Errorf("pipe round trip through %s: %w", cat, err)
			}
		}
		if i >= warmup {
			samples = append(samples, time.Since(start)/pipeBatch)
		}
	}
	return samples, nil
}

// roundTrip writes b to fd w and reads it back from fd r.
func roundTrip(w, r int, b []byte) error {
	if _, err := retryEINTR(func() (int, error) { return syscall.Write(w, b) }); err != nil {
		return err
	}
	n, err := retryEINTR(func() (int, error) { return syscall.Read(r, b) })
	if err == nil && n != len(b) {
		err = errors.New("the other end closed its pipe")
	}
	return err
}

// wait4 waits for process pid to end.
func wait4(pid int, ws *syscall.WaitStatus) (int, error) {
	return retryEINTR(func() (int, error) { return syscall.Wait4(pid, ws, 0, nil) })
}

// retryEINTR calls fn until it is not interrupted by a signal.
func retryEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// closeFds closes the file descriptors that are not -1.
func closeFds(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

// pooled summarises the samples of one figure of both moments together,
// skipping a moment whose reference failed.
func (r Reference) pooled(figure func(HostRef) Stats) Stats {
	var all []time.Duration
	for _, ref := range []HostRef{r.Start, r.End} {
		if ref.Err == "" {
			all = append(all, figure(ref).Samples...)
		}
	}
	return Summarize(all)
}
