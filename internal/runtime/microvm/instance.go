package microvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/hutch-dev/hutch/internal/runtime"
)

var (
	_ runtime.Instance = (*instance)(nil)
	_ runtime.Pauser   = (*instance)(nil)
)

// instance is one VM started by a Runtime.
type instance struct {
	rt      *Runtime
	id      string
	dir     string
	cmd     *exec.Cmd
	console *runtime.TailBuffer
	// conn is the agent's port; set by start before the instance is
	// handed out.
	conn net.Conn
	done chan struct{} // closed once QEMU has exited
	// destroyOnce guards destroyErr, the result every Destroy returns.
	destroyOnce sync.Once
	destroyErr  error

	mu sync.Mutex
	// destroying is set once Destroy (or a failed Start) has begun; reason
	// is why the VM ended on its own. Both are guarded by mu.
	destroying bool
	reason     runtime.End
}

func newInstance(r *Runtime, id, dir string, cmd *exec.Cmd, console *runtime.TailBuffer) *instance {
	i := &instance{rt: r, id: id, dir: dir, cmd: cmd, console: console, done: make(chan struct{})}
	go i.wait()
	return i
}

// wait reaps QEMU and records why it ended, unless it was stopped.
func (i *instance) wait() {
	err := i.cmd.Wait()
	i.mu.Lock()
	if !i.destroying {
		detail := "the VM exited"
		if err != nil {
			detail = fmt.Sprintf("the VM exited (%v)", err)
		}
		if l := runtime.LastLines(i.console.String(), 1, 256); l != "" {
			detail += ": " + l
		}
		i.reason = runtime.End{Cause: runtime.CauseExited, Detail: detail}
	}
	i.mu.Unlock()
	close(i.done)
}

// Conn is the agent's virtio-serial port, through QEMU's socket.
func (i *instance) Conn() io.ReadWriteCloser { return i.conn }

// Done is closed when QEMU has exited.
func (i *instance) Done() <-chan struct{} { return i.done }

// Exit says why the VM ended on its own; the zero End while it runs and
// after Destroy.
func (i *instance) Exit() runtime.End {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.reason
}

// StderrTail is the end of the VM's console: the kernel's and the
// agent's logs.
func (i *instance) StderrTail() string { return i.console.String() }

// Destroy kills QEMU (the VM holds nothing that must be saved: its
// writable layer is discarded), removes its cgroup and then the
// sandbox's directory, the last thing: whatever fails is left for
// Reconcile to find by that directory. It is idempotent.
func (i *instance) Destroy(ctx context.Context) error {
	i.destroyOnce.Do(func() {
		defer i.rt.forget(i.id)
		if i.conn != nil {
			defer i.conn.Close()
		}
		if err := i.kill(ctx); err != nil {
			// QEMU may still run: keep its directory (and pid file), by
			// which Reconcile finds and kills it later.
			i.destroyErr = err
			return
		}
		if err := i.rt.cg.Remove(ctx, cgroupRel(i.id)); err != nil {
			i.destroyErr = err
			return
		}
		if err := os.RemoveAll(i.dir); err != nil {
			i.destroyErr = fmt.Errorf("removing sandbox directory: %w", err)
		}
	})
	return i.destroyErr
}

// kill ends QEMU's process group and waits until QEMU is reaped.
func (i *instance) kill(ctx context.Context) error {
	i.mu.Lock()
	i.destroying = true
	select {
	case <-i.done:
		// The VM ended on its own first: Exit keeps why.
	default:
		i.reason = runtime.End{}
	}
	i.mu.Unlock()
	if err := syscall.Kill(-i.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing qemu: %w", err)
	}
	select {
	case <-i.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for qemu to exit: %w", ctx.Err())
	}
}
