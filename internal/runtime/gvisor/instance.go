package gvisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/runtime"
)

var (
	_ runtime.Instance    = (*instance)(nil)
	_ runtime.StatsReader = (*instance)(nil)
)

// instance is one sandbox started by a Runtime.
type instance struct {
	rt       *Runtime
	id       string
	memoryMB uint32 // the memory limit; guarded by mu (Resize changes it)
	conn     *conn
	// flags are the runsc flags it was started with (globalFlags).
	flags   []string
	stderr  *runtime.TailBuffer
	stderrR *os.File      // our end of the stderr pipe
	done    chan struct{} // closed by end
	// destroyOnce guards destroyErr, the result every Destroy returns.
	destroyOnce sync.Once
	destroyErr  error

	mu sync.Mutex
	// ending is set once end has begun; destroying once Destroy has. Both,
	// and reason, are guarded by mu.
	ending     bool
	destroying bool
	reason     runtime.End
	// filestore is the Sentry's descriptor of the writable-layer file
	// (disk.go), once found; guarded by mu.
	filestore string
	// tree is the shared layer tree it booted on (layer.go), "" for none.
	tree string
}

func newInstance(r *Runtime, spec runtime.Spec, flags []string, p *stdio, stderr *runtime.TailBuffer, stderrDone <-chan struct{}) *instance {
	i := &instance{
		rt:       r,
		id:       spec.ID,
		flags:    flags,
		memoryMB: spec.MemoryMB,
		stderr:   stderr,
		stderrR:  p.stderr,
		done:     make(chan struct{}),
		tree:     layerTree(spec),
	}
	i.conn = &conn{inst: i, r: p.stdout, w: p.stdin, src: p.stdout}
	go i.watchStderr(stderrDone)
	return i
}

// Conn is the agent's stdin (writes) and stdout (reads). A read that hits
// EOF means the sandbox is gone and ends the instance.
func (i *instance) Conn() io.ReadWriteCloser { return i.conn }

// Done is closed when the sandbox has ended.
func (i *instance) Done() <-chan struct{} { return i.done }

// Exit says why the sandbox ended on its own; the zero End while it runs
// and after an ordinary Destroy.
func (i *instance) Exit() runtime.End {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.reason
}

// StderrTail returns the last 8 KiB the agent and runsc wrote to stderr.
func (i *instance) StderrTail() string { return i.stderr.String() }

// Stats reads the sandbox's cgroups. Pids counts host tasks: the Sentry's
// and gofer's threads and the systrap stubs, not processes in the sandbox.
func (i *instance) Stats() (runtime.Stats, error) {
	s, err := i.rt.cg.Stats(cgroupRel(i.id))
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("stats of sandbox %s: %w", i.id, err)
	}
	// A writable layer that cannot be measured (a runsc that keeps it
	// elsewhere) reads 0: the other figures still stand.
	disk, _ := i.diskBytes()
	return runtime.Stats{CPUSeconds: s.CPUSeconds, MemoryBytes: s.MemoryBytes, Pids: s.Pids, DiskBytes: disk}, nil
}

// end marks the sandbox as ended: unless Destroy ended it, it first works
// out why, from the cgroups that runsc has not removed yet. It is
// idempotent; only the first call does anything.
func (i *instance) end() {
	i.mu.Lock()
	if i.ending {
		i.mu.Unlock()
		return
	}
	i.ending = true
	destroying := i.destroying
	i.mu.Unlock()
	if !destroying {
		reason := i.exitReason()
		i.mu.Lock()
		i.reason = reason
		i.mu.Unlock()
	}
	close(i.done)
}

// exitReason explains an unexpected end: the memory cgroup's OOM kill
// count tells an out-of-memory kill of the Sentry from anything else.
func (i *instance) exitReason() runtime.End {
	rel := cgroupRel(i.id)
	oom := false
	if n, err := i.rt.cg.OOMKills(rel); err == nil {
		oom = n > 0
	} else if hit, err := i.rt.cg.HitMemoryLimit(rel); err == nil {
		oom = hit // a kernel without an oom_kill counter
	}
	if oom {
		i.mu.Lock()
		limit := i.memoryMB
		i.mu.Unlock()
		if limit > 0 {
			return runtime.End{Cause: runtime.CauseOutOfMemory, Detail: fmt.Sprintf("out of memory (limit %d MiB)", limit)}
		}
		return runtime.End{Cause: runtime.CauseOutOfMemory, Detail: "out of memory"}
	}
	if n, err := i.rt.cg.PidsLimitHits(rel); err == nil && n > 0 {
		return runtime.End{Cause: runtime.CausePidsLimit, Detail: "process limit reached (pids_limit): the sandbox's runtime could not create another task"}
	}
	reason := "sandbox exited unexpectedly"
	// A fatal error of the Sentry or gofer is in runsc.log; keep it in the
	// stderr tail too, since the bundle goes away with the sandbox.
	msgs := runscLogErrors(filepath.Join(i.rt.sandboxDir(i.id), runscLogName))
	for _, m := range msgs {
		fmt.Fprintf(i.stderr, "runsc: %s\n", m)
	}
	if len(msgs) > 0 {
		reason += ": " + runtime.LastLines(firstLine(msgs[len(msgs)-1]), 1, 300)
	} else if tail := runtime.LastLines(i.stderr.String(), 3, 300); tail != "" {
		reason += ": " + tail
	}
	return runtime.End{Cause: runtime.CauseExited, Detail: reason}
}

// watchStderr waits for the stderr copy to end. The sandbox holds the
// pipe's only write end, so that usually means it is gone; it is certain
// once the stdout pipe has no writer left either (POLLHUP), which is how
// the end is noticed even when nobody reads Conn.
func (i *instance) watchStderr(stderrDone <-chan struct{}) {
	<-stderrDone
	if i.stdoutHungUp(time.Second) {
		i.end()
	}
}

// stdoutHungUp waits up to timeout for the agent's stdout to lose its last
// writer. It never consumes data.
func (i *instance) stdoutHungUp(timeout time.Duration) bool {
	rc, err := i.conn.r.SyscallConn()
	if err != nil {
		return false
	}
	hup := false
	_ = rc.Control(func(fd uintptr) {
		// With no events requested, poll reports only POLLHUP/POLLERR.
		fds := []unix.PollFd{{Fd: int32(fd)}}
		deadline := time.Now().Add(timeout)
		for {
			left := time.Until(deadline)
			if left < 0 {
				left = 0
			}
			n, err := unix.Poll(fds, int(left.Milliseconds()))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			hup = err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
			return
		}
	})
	return hup
}

// Destroy kills the sandbox and removes everything it held. It runs to the
// end even when ctx is cancelled (bounded by its own timeout); later calls
// return the first call's result.
func (i *instance) Destroy(ctx context.Context) error {
	i.destroyOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanup.Timeout)
		defer cancel()
		i.mu.Lock()
		i.destroying = true
		ending := i.ending
		i.mu.Unlock()
		if ending {
			// The sandbox ended on its own: let end read the cgroups
			// before runsc removes them.
			<-i.done
		}
		err := i.rt.teardown(ctx, i.id)
		i.conn.Close()
		i.stderrR.Close()
		i.end()
		i.rt.forget(i.id)
		if err != nil {
			i.destroyErr = fmt.Errorf("destroying sandbox %s: %w", i.id, err)
		}
	})
	return i.destroyErr
}

// conn is the byte stream to the agent.
type conn struct {
	inst *instance
	r    *os.File // agent's stdout
	w    *os.File // agent's stdin
	// src is what Read reads: r, or after a relink what follows the
	// marker on it.
	src io.Reader

	closeOnce sync.Once
}

// Read reads the agent's stdout. EOF, or any error other than our own
// Close, means the sandbox went away.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.src.Read(p)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		c.inst.end()
	}
	return n, err
}

// Write writes to the agent's stdin.
func (c *conn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close closes both pipes; the agent sees EOF on its stdin. It is
// idempotent and does not stop the sandbox.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.w.Close()
		c.r.Close()
	})
	return nil
}
