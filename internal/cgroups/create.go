package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// confined are the controllers of a cgroup Create makes (issue 38: 5):
// the ones runsc sets for a gVisor sandbox.
var confined = []string{"memory", "cpu", "pids"}

// Create makes cgroup rel with the memory, cpu and pids controllers, for a
// process hutch starts itself (QEMU; runsc makes gVisor's): one directory
// per controller on v1; on v2 one directory, the controllers enabled in
// every cgroup above it. Remove takes it away. An existing cgroup is kept.
func (l Layout) Create(rel string) error {
	rel = clean(rel)
	if rel == "" {
		return fmt.Errorf("creating cgroup %q: refusing a hierarchy root", rel)
	}
	if !l.V2 {
		for _, c := range confined {
			if err := os.MkdirAll(l.Path(c, rel), 0o755); err != nil {
				return fmt.Errorf("creating cgroup %s: %w", rel, err)
			}
		}
		return nil
	}
	enable := "+" + strings.Join(confined, " +")
	dir := l.Root
	for _, part := range strings.Split(rel, "/") {
		if err := writeFile(dir, "cgroup.subtree_control", enable); err != nil {
			return fmt.Errorf("creating cgroup %s: enabling its controllers: %w", rel, err)
		}
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating cgroup %s: %w", rel, err)
		}
	}
	return nil
}

// Join moves process pid, all its threads, into cgroup rel (made by
// Create); the processes and threads it starts after stay there.
func (l Layout) Join(rel string, pid int) error {
	dirs := []string{l.Path("", rel)}
	if !l.V2 {
		dirs = dirs[:0]
		for _, c := range confined {
			dirs = append(dirs, l.Path(c, rel))
		}
	}
	for _, dir := range dirs {
		if err := writeFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("moving process %d into cgroup %s: %w", pid, rel, err)
		}
	}
	return nil
}

// setPids sets cgroup rel's pids.max.
func (l Layout) setPids(rel string, n int64) error {
	return writeFile(l.Path("pids", rel), "pids.max", strconv.FormatInt(n, 10))
}
