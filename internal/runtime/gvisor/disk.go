package gvisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The writable layer's use: runsc keeps the root's upper layer in a file
// it creates in the bundle directory as runsc-filestore-* and unlinks at
// once (overlayFlag); the Sentry holds it open, allocates its blocks as
// files are written and punches them out as they are deleted. So the
// file's allocated blocks, read through the Sentry's descriptor, are what
// the sandbox's written files take.

// filestorePrefix begins the name of a sandbox's writable-layer file.
const filestorePrefix = "runsc-filestore-"

// diskBytes is the host space the writable layer of the sandbox takes.
func (i *instance) diskBytes() (uint64, error) {
	i.mu.Lock()
	fd := i.filestore
	i.mu.Unlock()
	want := filepath.Join(i.rt.sandboxDir(i.id), filestorePrefix)
	if fd == "" || !isFilestore(fd, want) {
		var err error
		if fd, err = i.findFilestore(want); err != nil {
			return 0, err
		}
		i.mu.Lock()
		i.filestore = fd
		i.mu.Unlock()
	}
	var st syscall.Stat_t
	if err := syscall.Stat(fd, &st); err != nil {
		return 0, fmt.Errorf("reading the writable layer's size: %w", err)
	}
	return uint64(st.Blocks) * 512, nil
}

// isFilestore reports whether descriptor link fd names a file of the
// sandbox's bundle whose path begins with want.
func isFilestore(fd, want string) bool {
	target, err := os.Readlink(fd)
	return err == nil && strings.HasPrefix(target, want)
}

// findFilestore finds the Sentry's descriptor of the writable-layer file
// among the processes of the sandbox's cgroup: /proc/<pid>/fd/<n>.
func (i *instance) findFilestore(want string) (string, error) {
	procs, err := os.ReadFile(filepath.Join(i.rt.cg.Path("pids", cgroupRel(i.id)), "cgroup.procs"))
	if err != nil {
		return "", fmt.Errorf("listing the sandbox's processes: %w", err)
	}
	for _, pid := range strings.Fields(string(procs)) {
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		dir := filepath.Join("/proc", pid, "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone meanwhile
		}
		for _, e := range fds {
			if fd := filepath.Join(dir, e.Name()); isFilestore(fd, want) {
				return fd, nil
			}
		}
	}
	return "", fmt.Errorf("no process of sandbox %s holds its writable layer", i.id)
}
