// Package cgroups reads and removes the Linux control groups that hutch's
// runtimes create for their sandboxes, on both hierarchies the kernel
// offers: cgroup v1 (one mount per controller, /sys/fs/cgroup/<ctrl>/...)
// and cgroup v2 (one unified tree, /sys/fs/cgroup/...).
//
// A cgroup is named by its path relative to the hierarchy root
// ("hutch/<id>"); the package maps it to the directories of every mounted
// hierarchy. It reads, removes, and changes the limits of a running
// sandbox's cgroup (limits.go): creating and first configuring cgroups is
// the job of the runtime (runsc, for gVisor). Every function works against
// any root directory, so it can be tested against a fake tree.
package cgroups

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultRoot is where the kernel's cgroup hierarchies are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// Layout is a detected cgroup hierarchy layout.
type Layout struct {
	// Root is the directory the hierarchies are mounted under.
	Root string
	// V2 is true when Root itself is the unified (v2) hierarchy. A hybrid
	// host (v1 controllers plus a v2 tree at Root/unified) counts as v1, as
	// it does for runc and runsc.
	V2 bool
}

// Detect finds the layout under root: v2 when root holds
// cgroup.controllers, v1 when it holds a memory controller directory.
func Detect(root string) (Layout, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return Layout{Root: root, V2: true}, nil
	}
	if _, err := os.Stat(filepath.Join(root, "memory", "memory.limit_in_bytes")); err == nil {
		return Layout{Root: root}, nil
	}
	return Layout{}, fmt.Errorf("detecting cgroups under %s: neither a v2 hierarchy nor a v1 memory controller is mounted", root)
}

// String describes the layout for logs.
func (l Layout) String() string {
	if l.V2 {
		return "cgroup v2 at " + l.Root
	}
	return "cgroup v1 at " + l.Root
}

// Path is the directory of cgroup rel for controller ("memory", "pids",
// "cpuacct"). On v2 the controller is ignored.
func (l Layout) Path(controller, rel string) string {
	if l.V2 {
		return filepath.Join(l.Root, clean(rel))
	}
	return filepath.Join(l.Root, controller, clean(rel))
}

// Dirs lists the existing directories of cgroup rel: one on v2, one per
// hierarchy that has it on v1 (co-mounted controllers reached through
// symlinks such as cpu -> cpu,cpuacct count once).
func (l Layout) Dirs(rel string) []string {
	if l.V2 {
		p := filepath.Join(l.Root, clean(rel))
		if isDir(p) {
			return []string{p}
		}
		return nil
	}
	entries, err := os.ReadDir(l.Root)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var dirs []string
	for _, e := range entries {
		hier := filepath.Join(l.Root, e.Name())
		if real, err := filepath.EvalSymlinks(hier); err == nil {
			hier = real
		}
		if seen[hier] {
			continue
		}
		seen[hier] = true
		p := filepath.Join(hier, clean(rel))
		if isDir(p) {
			dirs = append(dirs, p)
		}
	}
	return dirs
}

// Exists reports whether any hierarchy has cgroup rel.
func (l Layout) Exists(rel string) bool { return len(l.Dirs(rel)) > 0 }

// Remove removes cgroup rel and every cgroup below it from all hierarchies,
// deepest first. A cgroup that still has tasks cannot be removed (EBUSY);
// Remove retries until ctx is done, since tasks of a killed sandbox take a
// moment to leave. A cgroup that does not exist is not an error.
func (l Layout) Remove(ctx context.Context, rel string) error {
	if clean(rel) == "" {
		return fmt.Errorf("removing cgroup %q: refusing to remove a hierarchy root", rel)
	}
	var errs []error
	for _, dir := range l.Dirs(rel) {
		if err := removeTree(ctx, dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeTree rmdirs dir and its sub-directories, children first. Only rmdir
// is used: the files of a cgroup vanish with its directory.
func removeTree(ctx context.Context, dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing cgroup %s: %w", dir, err)
	}
	// Deeper paths sort after their parents; remove in reverse.
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := rmdirRetry(ctx, dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// rmdirRetry removes one cgroup directory, retrying while it is busy.
func rmdirRetry(ctx context.Context, dir string) error {
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing cgroup %s: %w (%v)", dir, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// OOMKills is how many processes the kernel's OOM killer has killed in
// cgroup rel because it reached its memory limit (v1: memory.oom_control
// "oom_kill", kernel 4.13+; v2: memory.events "oom_kill").
func (l Layout) OOMKills(rel string) (uint64, error) {
	if l.V2 {
		return readKey(l.Path("", rel), "memory.events", "oom_kill")
	}
	return readKey(l.Path("memory", rel), "memory.oom_control", "oom_kill")
}

// HitMemoryLimit reports whether cgroup rel's memory use ever reached its
// limit (v1: memory.failcnt; v2: memory.events "max"). It is a weaker sign
// than OOMKills: reclaim may have succeeded.
func (l Layout) HitMemoryLimit(rel string) (bool, error) {
	var n uint64
	var err error
	if l.V2 {
		n, err = readKey(l.Path("", rel), "memory.events", "max")
	} else {
		n, err = readUint(filepath.Join(l.Path("memory", rel), "memory.failcnt"))
	}
	return n > 0, err
}

// Stats is the resource use of one cgroup.
type Stats struct {
	// CPUSeconds is the CPU time used by all its tasks.
	CPUSeconds float64
	// MemoryBytes is the memory in use minus inactive file cache, the
	// "working set" that docker stats and the kubelet report.
	MemoryBytes uint64
	// Pids is the number of tasks (host threads) in it.
	Pids uint64
}

// Stats reads cgroup rel's resource use.
func (l Layout) Stats(rel string) (Stats, error) {
	var s Stats
	var errs []error
	if l.V2 {
		dir := l.Path("", rel)
		usec, err := readKey(dir, "cpu.stat", "usage_usec")
		errs = append(errs, err)
		s.CPUSeconds = float64(usec) / 1e6
		usage, err := readUint(filepath.Join(dir, "memory.current"))
		errs = append(errs, err)
		inactive, _ := readKey(dir, "memory.stat", "inactive_file")
		s.MemoryBytes = workingSet(usage, inactive)
		s.Pids, err = readUint(filepath.Join(dir, "pids.current"))
		errs = append(errs, err)
	} else {
		ns, err := readUint(filepath.Join(l.Path("cpuacct", rel), "cpuacct.usage"))
		errs = append(errs, err)
		s.CPUSeconds = float64(ns) / 1e9
		mem := l.Path("memory", rel)
		usage, err := readUint(filepath.Join(mem, "memory.usage_in_bytes"))
		errs = append(errs, err)
		inactive, _ := readKey(mem, "memory.stat", "total_inactive_file")
		s.MemoryBytes = workingSet(usage, inactive)
		s.Pids, err = readUint(filepath.Join(l.Path("pids", rel), "pids.current"))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("reading stats of cgroup %s: %w", rel, err)
	}
	return s, nil
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// clean turns rel into a relative path without leading slashes or "..".
func clean(rel string) string {
	c := filepath.Clean("/" + rel)
	return strings.TrimPrefix(c, "/")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// readUint reads a file holding one unsigned number ("max" reads as 0).
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", path, err)
	}
	return n, nil
}

// readKey reads the value of key from a flat keyed file ("key value" lines).
func readKey(dir, file, key string) (uint64, error) {
	path := filepath.Join(dir, file)
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s in %s: %w", key, path, err)
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return 0, fmt.Errorf("reading %s: no %q line", path, key)
}
