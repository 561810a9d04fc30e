package image

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// builder creates the root filesystem of recipe r at dst, which does not
// exist yet, reporting each line of progress. Store.build is one; tests
// substitute fakes.
type builder func(ctx context.Context, r recipe, dst string, progress func(line string)) error

// mmdebstrapBuilder returns the builder that runs mmdebstrap against mirror.
func mmdebstrapBuilder(mirror string) builder {
	return func(ctx context.Context, r recipe, dst string, progress func(string)) error {
		argv := append([]string{"mmdebstrap"}, r.mmdebstrapArgs(dst, mirror)...)
		err := runLogged(ctx, argv, buildAttr(), progress)
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%w (install it with `apt-get install mmdebstrap`)", err)
		}
		return err
	}
}

// buildAttr isolates a build from the host it runs on. A private mount
// namespace: the /proc, /sys and /dev mounts mmdebstrap makes in the chroot
// vanish with it, even if it is killed, so removing a half-built tree never
// reaches host files. A private PID namespace: when the build ends or is
// killed, so is every process it started, also those that left its
// process group (apt runs dpkg in a session of its own), so none can write
// into a tree the next build is clearing.
func buildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Cloneflags: syscall.CLONE_NEWPID}
}

// Limits of a build's captured output.
const (
	maxTailBytes = 2 << 10 // kept for the error message
	maxLineBytes = 1 << 10 // longer lines are cut
)

// runLogged runs argv with attr in its own process group, killed whole
// when ctx ends, reporting each output line to progress. On failure the
// error ends with the last lines of output.
func runLogged(ctx context.Context, argv []string, attr *syscall.SysProcAttr, progress func(string)) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr = attr
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &outputLog{progress: progress}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if tail := out.tail(); tail != "" {
			return fmt.Errorf("%s: %w; last output:\n%s", argv[0], err, tail)
		}
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}

// outputLog splits a command's output into lines (at \n or \r, so progress
// bars count too), reports each non-empty one and keeps the last ones, at
// most maxTailBytes in all. Its Write is called by one goroutine at a time.
type outputLog struct {
	progress func(string)
	partial  []byte   // the line being written
	lines    []string // the last complete lines
	size     int      // total bytes of lines
}

func (o *outputLog) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' || b == '\r' {
			o.endLine()
			continue
		}
		if len(o.partial) < maxLineBytes {
			o.partial = append(o.partial, b)
		}
	}
	return len(p), nil
}

// endLine completes the line being written.
func (o *outputLog) endLine() {
	line := strings.TrimSpace(string(o.partial))
	o.partial = o.partial[:0]
	if line == "" {
		return
	}
	if o.progress != nil {
		o.progress(line)
	}
	o.lines = append(o.lines, line)
	o.size += len(line) + 1
	for o.size > maxTailBytes && len(o.lines) > 1 {
		o.size -= len(o.lines[0]) + 1
		o.lines = o.lines[1:]
	}
}

// tail returns the last lines of output, including an unfinished one.
func (o *outputLog) tail() string {
	if len(o.partial) > 0 {
		o.endLine()
	}
	return strings.Join(o.lines, "\n")
}
