package microvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Reconcile destroys every VM of this runtime whose id keep rejects: the
// live ones, and those a crashed daemon left (a sandbox directory, and the
// QEMU process its pid file names, if that is still the QEMU of that
// directory).
func (r *Runtime) Reconcile(ctx context.Context, keep func(id string) bool) ([]string, error) {
	var destroyed []string
	var errs []error
	r.mu.Lock()
	var live []*instance
	claimed := map[string]bool{}
	for id, inst := range r.live {
		claimed[id] = true
		if inst != nil && !keep(id) {
			live = append(live, inst)
		}
	}
	r.mu.Unlock()
	for _, inst := range live {
		if err := inst.Destroy(ctx); err != nil {
			errs = append(errs, err)
		}
		destroyed = append(destroyed, inst.id)
	}
	ids, err := r.leftoverIDs(ctx)
	if err != nil {
		return destroyed, errors.Join(append(errs, err)...)
	}
	for _, id := range ids {
		if claimed[id] || keep(id) {
			continue
		}
		if err := r.removeLeftover(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("sandbox %s: %w", id, err))
			continue
		}
		destroyed = append(destroyed, id)
	}
	return destroyed, errors.Join(errs...)
}

// leftoverIDs are the ids of every sandbox directory of this runtime.
func (r *Runtime) leftoverIDs(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	entries, err := os.ReadDir(r.sandboxesDir())
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		set[e.Name()] = true
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// removeLeftover kills the QEMU of a sandbox directory no Runtime holds,
// then removes the directory (its network is the network service's).
func (r *Runtime) removeLeftover(ctx context.Context, id string) error {
	dir := r.sandboxDir(id)
	if pid := leftoverPID(dir); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for processExists(pid) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for qemu %d to exit: %w", pid, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if err := r.cg.Remove(ctx, cgroupRel(id)); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// leftoverPID is the pid in dir's pid file if that process is a QEMU of
// dir (it runs in dir, and names its socket), else 0: a pid may have been
// reused since.
func leftoverPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil || cwd != dir {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("path="+socketName+",")) {
		return 0
	}
	return pid
}

// processExists reports whether pid is a process that has not been reaped
// (a zombie of ours counts: a crashed daemon's children are reaped by
// init, not by us).
func processExists(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
		return false
	}
	return true
}
