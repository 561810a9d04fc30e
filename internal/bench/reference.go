package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
	// PipeOneCPU and PipeTwoCPUs are one byte written to a cat process
	// through a pipe and read back through another, each sample the mean of
	// pipeBatch round trips: with both processes on one CPU (a context
	// switch: the host's own speed) and on two (a wake-up across CPUs,
	// which waits for the other CPU: what a busy host slows most). Left to
	// itself the scheduler picks either from one moment to the next, so
	// the bench pins them. PipeTwoCPUs has no samples on one CPU.
	PipeOneCPU  Stats `json:"pipe_round_trip_one_cpu"`
	PipeTwoCPUs Stats `json:"pipe_round_trip_two_cpus"`
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
	ref.Spawn = Summarize(spawn)
	var one, two []time.Duration
	if err == nil {
		one, err = pipeRoundTrips(warmup, runs, false)
		ref.PipeOneCPU = Summarize(one)
	}
	if err == nil {
		two, err = pipeRoundTrips(warmup, runs, true)
		ref.PipeTwoCPUs = Summarize(two)
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
// trips through a cat process, the two pinned to one CPU or, with cross,
// to two, and returns the timed batches' means; none with cross on one
// CPU. The bench's side makes blocking read and write system calls on one
// OS thread, so that neither Go's network poller nor its scheduler is part
// of what is measured: only two host processes waking each other.
func pipeRoundTrips(warmup, runs int, cross bool) (samples []time.Duration, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved unix.CPUSet
	if err := unix.SchedGetaffinity(0, &saved); err != nil {
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
	cpus := allowedCPUs(saved)
	switch {
	case len(cpus) == 0:
		return nil, errors.New("pipe round trip: no CPU allowed")
	case cross && len(cpus) < 2:
		return nil, nil
	}
	here, there := cpus[0], cpus[0]
	if cross {
		there = cpus[1]
	}
	if err := pin(0, here); err != nil {
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
	defer unix.SchedSetaffinity(0, &saved)

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
		// cat ends at the end of its input, or was killed when it could
		// not be pinned.
		closeFds(to[1], from[0])
		var ws syscall.WaitStatus
		if _, werr := wait4(pid, &ws); werr != nil && err == nil {
			err = fmt.Errorf("pipe round trip: waiting for %s: %w", cat, werr)
		}
	}()
	if err := pin(pid, there); err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		return nil, fmt.Errorf("pipe round trip: %w", err)
	}
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

// allowedCPUs lists the CPUs of set.
func allowedCPUs(set unix.CPUSet) []int {
	var cpus []int
	for i := 0; len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// pin keeps thread or process pid (0: the calling thread) on cpu.
func pin(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return fmt.Errorf("pinning to CPU %d: %w", cpu, err)
	}
	return nil
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

// pooled summarises the samples of one figure of both moments together
// (a figure that failed has none).
func (r Reference) pooled(figure func(HostRef) Stats) Stats {
	return Summarize(append(slices.Clone(figure(r.Start).Samples), figure(r.End).Samples...))
}
