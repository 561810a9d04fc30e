package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// procCgroups, when not "", is the cgroup directory under which every
// process the agent starts is born into a cgroup of its own (clone3's
// CLONE_INTO_CGROUP): a microVM's init bounds the sandbox's tasks there and
// stays outside, so that hitting the bound never keeps the agent itself
// from making a thread, and enables the memory controller below it, so
// that a process's end can tell whether the kernel's OOM killer ended it.
// Set once, before serving (vminit_linux.go).
var procCgroups string

// procCgroupSeq names the processes' cgroups.
var procCgroupSeq atomic.Uint64

// procCgroup is the cgroup of one process and its descendants; nil outside
// a microVM.
type procCgroup struct {
	dir string
	fd  int // an O_PATH descriptor for clone3, -1 once the process runs
}

// newProcCgroup makes the cgroup of a process about to start under
// procCgroups, or returns nil when there is none.
func newProcCgroup() (*procCgroup, error) {
	if procCgroups == "" {
		return nil, nil
	}
	dir := filepath.Join(procCgroups, "p"+strconv.FormatUint(procCgroupSeq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the process's cgroup: %v", err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, fmt.Errorf("opening the process's cgroup: %v", err)
	}
	return &procCgroup{dir: dir, fd: fd}, nil
}

// started closes the descriptor the spawn needed.
func (c *procCgroup) started() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// end is called once the process has exited (or failed to start): it
// reports whether the OOM killer killed a task of the cgroup and removes
// the cgroup, later if tasks the process left behind still run there.
func (c *procCgroup) end() bool {
	if c == nil {
		return false
	}
	c.started()
	oom := oomKills(c.dir) > 0
	lingering.remove(c.dir)
	return oom
}

// oomKills is the oom_kill count of the memory.events of cgroup dir, or 0
// when it cannot be read (no memory controller). The kernel counts a kill
// before it sends SIGKILL, so the count is complete once the victim has
// been reaped.
func oomKills(dir string) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if ok && string(key) == "oom_kill" {
			n, _ := strconv.ParseUint(string(value), 10, 64)
			return n
		}
	}
	return 0
}

// lingering are the cgroups of ended processes that could not be removed
// yet: descendants the process left behind still run in them. Each removal
// tries them again.
var lingering = &cgroupSet{dirs: make(map[string]struct{})}

// cgroupSet is a set of cgroup directories waiting to be removed.
type cgroupSet struct {
	// mu guards dirs.
	mu   sync.Mutex
	dirs map[string]struct{}
}

// remove removes cgroup dir and every waiting one it can, and keeps those
// still busy for the next call.
func (s *cgroupSet) remove(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirs[dir] = struct{}{}
	for d := range s.dirs {
		if err := unix.Rmdir(d); err == nil || err == unix.ENOENT {
			delete(s.dirs, d)
		}
	}
}
