package bench

// Memory scenarios: the host memory an idle sandbox costs, as the sum of
// the proportional set size (PSS) of all its host processes, and how many
// idle sandboxes the machine holds while creates stay fast. PSS splits
// pages shared between processes (runsc's binary, libraries) among them,
// so summing it over a sandbox's processes counts each page once overall.
// They read /proc, so they need the daemon on this machine and root.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

const (
	// idleSettle is how long sandboxes sit idle before they are measured.
	idleSettle = 2 * time.Second
	// DefaultSlowCreate ends the capacity scenario: the machine no longer
	// holds more sandboxes comfortably once a create takes longer.
	DefaultSlowCreate = time.Second
)

// Capacity is the outcome of the idle capacity scenario.
type Capacity struct {
	// Held is how many idle sandboxes were live, each created in under
	// Options.SlowCreate, when the scenario stopped; Limit says why it stopped.
	Held  int    `json:"held"`
	Limit string `json:"limit"`
	// Creates are the latencies of the creates that made them.
	Creates Stats `json:"creates"`
	// MemAvailableDrop is how much the host's MemAvailable fell, per
	// sandbox held (kernel memory included), in bytes.
	MemAvailableDrop uint64 `json:"mem_available_drop_per_sandbox_bytes"`
	// PSS is each held sandbox's processes' PSS.
	PSS Sizes `json:"pss"`
}

// process is one host process: its parent, command line and CPU time.
type process struct {
	ppid    int
	cmdline string
	// ticks is the CPU time (user and system, in clock ticks) the process
	// has used, and childTicks that of its children it has reaped.
	ticks, childTicks uint64
}

// processes reads every process of /proc.
func processes() (map[int]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]process{}
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		p, ok := readStat(pid)
		if !ok {
			continue // gone meanwhile
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		p.cmdline = string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		out[pid] = p
	}
	return out, nil
}

// readStat reads process pid's parent and CPU times from /proc (not its
// command line); false when it cannot.
func readStat(pid int) (process, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return process{}, false
	}
	// The fields after the command name, which may hold anything,
	// start after its last ')': state, ppid, ..., then utime, stime,
	// cutime and cstime (fields 14 to 17 of proc(5)).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 15 {
		return process{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	var t [4]uint64
	for i, v := range f[11:15] {
		t[i], _ = strconv.ParseUint(v, 10, 64)
	}
	return process{ppid: ppid, ticks: t[0] + t[1], childTicks: t[2] + t[3]}, true
}

// treePSS sums, for each key, the PSS of the processes whose command line
// contains it (runsc's sandbox and gofer name the sandbox id; Docker's
// shim names the container id) or whose working directory is named by it
// (a microVM's QEMU runs in <data>/microvm/sandboxes/<id>), and of all
// their descendants (gVisor's systrap stubs have no command line of their
// own). It also returns how many processes each key has.
func treePSS(keys []string) (pss map[string]uint64, procs map[string]int, err error) {
	all, err := processes()
	if err != nil {
		return nil, nil, err
	}
	children := map[int][]int{}
	for pid, p := range all {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	cwds := map[int]string{}
	cwd := func(pid int) string {
		d, ok := cwds[pid]
		if !ok {
			d, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
			cwds[pid] = d
		}
		return d
	}
	pss, procs = map[string]uint64{}, map[string]int{}
	for _, key := range keys {
		seen := map[int]bool{}
		var queue []int
		for pid, p := range all {
			if strings.Contains(p.cmdline, key) || filepath.Base(cwd(pid)) == key {
				queue = append(queue, pid)
			}
		}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if seen[pid] {
				continue
			}
			seen[pid] = true
			queue = append(queue, children[pid]...)
			n, err := processPSS(pid)
			if err != nil {
				continue // gone meanwhile
			}
			pss[key] += n
		}
		procs[key] = len(seen)
	}
	return pss, procs, nil
}

// processPSS reads the Pss line of /proc/<pid>/smaps_rollup, in bytes.
func processPSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no Pss in /proc/%d/smaps_rollup", pid)
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

// checkLocal skips a scenario that reads the daemon's processes when the
// daemon is not on this machine, as far as its URL tells.
func (e *env) checkLocal() error {
	u, err := url.Parse(e.c.URL())
	if err != nil {
		return err
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return skipf("the daemon at %s may be on another machine; its sandboxes' processes are measured on this one", e.c.URL())
	}
	return nil
}

// sandboxesPSS measures the PSS of each of ids; none may be without
// processes (the daemon would then be elsewhere, or /proc unreadable).
func sandboxesPSS(ids []string, what string) ([]uint64, error) {
	pss, procs, err := treePSS(ids)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if procs[id] == 0 {
			return nil, skipf("no process on this machine names %s %s (is the daemon here? run the bench as root)", what, id)
		}
		out = append(out, pss[id])
	}
	return out, nil
}

// checkVisible skips a scenario early when the first sandbox it created
// has no process on this machine (sandboxesPSS would find out only after
// all of them idled).
func checkVisible(id string) error {
	_, err := sandboxesPSS([]string{id}, "sandbox")
	return err
}

// idleMemory creates Runs sandboxes, runs true in each, lets them idle,
// and measures each one's host processes.
func idleMemory(ctx context.Context, e *env) (Result, error) {
	if err := e.checkLocal(); err != nil {
		return Result{}, err
	}
	ids, err := e.createIdle(ctx, e.opts.Runs, func() (string, error) { return e.create(ctx) })
	defer e.stopSandboxes(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	res, err := idlePSS(ids, "sandbox", idleSettle)
	res.Note = fmt.Sprintf("%d sandboxes idle together, %s after one exec each; all host processes of each (runsc sandbox, gofer, systrap stubs)", len(ids), idleSettle)
	return res, err
}

// createIdle creates n sandboxes with newID and runs true in each; the
// first must have processes on this machine. The caller stops the ids it
// returns, also when it fails.
func (e *env) createIdle(ctx context.Context, n int, newID func() (string, error)) ([]string, error) {
	ids, err := makeN(n, newID, func(id string) error {
		_, err := e.exec(ctx, id, "true")
		return err
	})
	if err == nil && len(ids) > 0 {
		err = checkVisible(ids[0])
	}
	return ids, err
}

// idlePSS lets the sandboxes or containers ids idle for settle, then
// measures them.
func idlePSS(ids []string, what string, settle time.Duration) (Result, error) {
	time.Sleep(settle)
	pss, err := sandboxesPSS(ids, what)
	if err != nil {
		return Result{}, err
	}
	s := SummarizeSizes(pss)
	return Result{Memory: &s}, nil
}

// dockerIdleMemory is idleMemory with Docker containers (the container's
// processes and its containerd shim).
var dockerIdleMemory = baseline{name: baselineDocker, title: "docker: memory per idle container (PSS, shim included)", run: func(ctx context.Context, e *env) (Result, error) {
	ids, err := e.startContainers(ctx, e.opts.Runs, func(id string) error {
		_, err := e.dockerRun(ctx, id, "true")
		return err
	})
	defer e.removeContainers(ctx, ids)
	if err != nil {
		return Result{}, err
	}
	return idlePSS(ids, "container", idleSettle)
}}

// idleCapacity creates idle sandboxes one after another until a create
// fails, takes longer than Options.SlowCreate, or MaxIdle are live; then it
// measures them and stops them all.
func idleCapacity(ctx context.Context, e *env) (Result, error) {
	if err := e.checkLocal(); err != nil {
		return Result{}, err
	}
	before, err := memAvailable()
	if err != nil {
		return Result{}, err
	}
	var ids []string
	defer func() {
		for _, id := range ids {
			e.stops.stop(ctx, id)
		}
	}()
	var creates []time.Duration
	slow := cmp.Or(e.opts.SlowCreate, DefaultSlowCreate)
	limit := ""
	for len(ids) < e.opts.MaxIdle && limit == "" {
		start := time.Now()
		id, err := e.create(ctx)
		d := time.Since(start)
		var env *api.ErrorEnvelope
		switch {
		case errors.As(err, &env) && env.Code == string(errdefs.CodeCapacity):
			limit = fmt.Sprintf("the daemon's max_concurrent_sandboxes (%s); raise it to measure the machine", clip(env.Message, 200))
		case err != nil:
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			limit = "create failed: " + clip(err.Error(), 300)
		case d > slow:
			e.stops.stop(ctx, id)
			limit = fmt.Sprintf("create %d took %s", len(ids)+1, d.Round(time.Millisecond))
		default:
			ids = append(ids, id)
			creates = append(creates, d)
			if len(ids) == 1 {
				if err := checkVisible(id); err != nil {
					return Result{}, err
				}
			}
		}
	}
	if limit == "" {
		limit = fmt.Sprintf("the scenario's cap (--max-idle %d)", e.opts.MaxIdle)
	}
	e.progress("bench:   %d idle sandboxes held; %s", len(ids), limit)
	if len(ids) == 0 {
		return Result{}, errors.New(limit)
	}
	time.Sleep(idleSettle)
	after, err := memAvailable()
	if err != nil {
		return Result{}, err
	}
	pss, err := sandboxesPSS(ids, "sandbox")
	if err != nil {
		return Result{}, err
	}
	c := &Capacity{Held: len(ids), Limit: limit, Creates: Summarize(creates), PSS: SummarizeSizes(pss)}
	if before > after {
		c.MemAvailableDrop = (before - after) / uint64(len(ids))
	}
	return Result{Capacity: c}, nil
}
