package gvisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killGrace is how long teardown waits for runsc to have stopped a
// sandbox's processes before it kills them itself.
const killGrace = 3 * time.Second

// teardown removes every trace of sandbox id, in order: runsc's sandbox
// (killed) and state, leftover processes, cgroups, mounts, and last the bundle
// directory. It keeps going after a failed step, returns all the
// errors, and is safe to repeat.
func (r *Runtime) teardown(ctx context.Context, id string) error {
	var errs []error
	if _, err := r.runscOutput(ctx, id, "delete", "--force", id); err != nil && r.runscKnows(ctx, id) {
		errs = append(errs, err)
	}
	if err := r.waitProcessesGone(ctx, id); err != nil {
		errs = append(errs, err)
	}
	if err := r.cg.Remove(ctx, cgroupRel(id)); err != nil {
		errs = append(errs, err)
	}
	dir := r.sandboxDir(id)
	if err := unmountAll(dir); err != nil {
		errs = append(errs, err)
	}
	// Never RemoveAll through a mount: that would walk into the image.
	if mps, err := mountsUnder(dir); err != nil || len(mps) > 0 {
		errs = append(errs, fmt.Errorf("keeping %s: still mounted %v (%v)", dir, mps, err))
	} else if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing bundle: %w", err))
	}
	return errors.Join(errs...)
}

// runscKnows reports whether runsc still has state for id; a failed
// "delete" of a container runsc does not know is not an error.
func (r *Runtime) runscKnows(ctx context.Context, id string) bool {
	ids, err := r.runscList(ctx)
	if err != nil {
		return true
	}
	for _, known := range ids {
		if known == id {
			return true
		}
	}
	return false
}

// runscList returns the ids of the containers in runsc's state.
func (r *Runtime) runscList(ctx context.Context) ([]string, error) {
	out, err := r.runscOutput(ctx, "", "list", "-quiet")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// waitProcessesGone waits until no runsc process of sandbox id (sandbox,
// gofer, a stray run) is left, killing them after killGrace.
func (r *Runtime) waitProcessesGone(ctx context.Context, id string) error {
	deadline := time.Now().Add(killGrace)
	for {
		pids := r.sandboxProcesses(id)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for processes %v of sandbox %s: %w", pids, id, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sandboxProcesses finds the host processes of sandbox id: runsc binaries
// (runsc, runsc-sandbox, runsc-gofer) running with this runtime's --root
// and id as their last argument.
func (r *Runtime) sandboxProcesses(id string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	root := r.runscRoot()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		if isSandboxProcess(args, root, id) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isSandboxProcess matches a runsc command line of container id under
// runsc root dir root.
func isSandboxProcess(args []string, root, id string) bool {
	if len(args) < 2 || args[len(args)-1] != id || !strings.HasPrefix(filepath.Base(args[0]), "runsc") {
		return false
	}
	for j, a := range args {
		if a == "--root="+root || (a == "--root" && j+1 < len(args) && args[j+1] == root) {
			return true
		}
	}
	return false
}
