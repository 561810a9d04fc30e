package bench

// The soak (issue 38: 4): a mix of operations from several owners at once
// for a long time, reported per window: operations done, errors by S-code,
// and the daemon's RSS, goroutines, open fds and threads; at the end the
// slope of each over the windows after the first, and the sandboxes left.

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// SoakOptions configure Soak.
type SoakOptions struct {
	// Duration is how long the soak runs; Window how long each report
	// window is.
	Duration, Window time.Duration
	// Image is the catalog image of the sandboxes.
	Image string
	// DaemonPID is the daemon's process, whose RSS, fds and threads are
	// read from /proc; 0 reads none.
	DaemonPID int
	// Progress receives a line per window.
	Progress io.Writer
}

// SoakWindow is one window's figures.
type SoakWindow struct {
	Ops int64 `json:"ops"`
	// Errors counts unexpected errors by S-code; Expected the errors of
	// the failing and hostile calls, which must fail.
	Errors     map[string]int64 `json:"errors"`
	Expected   int64            `json:"expected_errors"`
	RSSKiB     int64            `json:"rss_kib"`
	FDs        int64            `json:"fds"`
	Threads    int64            `json:"threads"`
	Goroutines int64            `json:"goroutines"`
	Live       int              `json:"live_sandboxes"`
}

// SoakReport is the soak's result.
type SoakReport struct {
	Windows []SoakWindow `json:"windows"`
	// Slopes are per hour, by least squares over the windows after the
	// first (none with fewer than three windows).
	Slopes map[string]float64 `json:"slopes_per_hour"`
	// LeftSandboxes are the owners' sandboxes still live after the soak
	// stopped its own.
	LeftSandboxes int `json:"left_sandboxes"`
}

// soakCounter collects one window's operations and errors. What ends
// after the soak's context (cut off by its end) is not counted.
type soakCounter struct {
	ctx      context.Context
	mu       sync.Mutex
	ops      int64
	errs     map[string]int64
	expected int64
}

func (c *soakCounter) done(err error, expectFail bool) {
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	switch {
	case expectFail && err != nil:
		c.expected++
	case expectFail:
		c.errs["unexpected success"]++
	case err != nil:
		c.errs[string(errdefs.CodeOf(err))]++
	}
}

func (c *soakCounter) take() (int64, map[string]int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops, errs, exp := c.ops, c.errs, c.expected
	c.ops, c.errs, c.expected = 0, map[string]int64{}, 0
	return ops, errs, exp
}

// Soak runs the mix with one worker per owner's client until opts.Duration
// has passed, and reports each window.
func Soak(ctx context.Context, owners []*client.Client, opts SoakOptions) (SoakReport, error) {
	if opts.Window <= 0 || opts.Duration < opts.Window {
		return SoakReport{}, fmt.Errorf("the soak needs a duration of at least one window (%s)", opts.Window)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	cnt := &soakCounter{ctx: ctx, errs: map[string]int64{}}
	var wg sync.WaitGroup
	for _, c := range owners {
		wg.Go(func() { soakWorker(ctx, c, opts.Image, cnt) })
	}
	var rep SoakReport
	tick := time.NewTicker(opts.Window)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			done = true
		}
		ops, errs, exp := cnt.take()
		if done && ops == 0 {
			break // the soak ended on a window's boundary
		}
		w := SoakWindow{Ops: ops, Errors: errs, Expected: exp}
		readProc(opts.DaemonPID, &w)
		w.Goroutines = goroutines(context.WithoutCancel(ctx), owners[0])
		live := 0
		for _, c := range owners {
			if l, err := c.List(context.WithoutCancel(ctx)); err == nil {
				live += len(liveOf(l))
			}
		}
		w.Live = live
		rep.Windows = append(rep.Windows, w)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "soak: window %d: %d ops, errors %v, %d expected, rss %d KiB, %d goroutines, %d fds, %d threads, %d live\n",
				len(rep.Windows), w.Ops, w.Errors, w.Expected, w.RSSKiB, w.Goroutines, w.FDs, w.Threads, w.Live)
		}
	}
	wg.Wait()
	rep.Slopes = slopes(rep.Windows, opts.Window)
	for _, c := range owners {
		if l, err := c.List(context.WithoutCancel(ctx)); err == nil {
			rep.LeftSandboxes += len(liveOf(l))
		}
	}
	return rep, nil
}

// liveOf keeps the sandboxes not stopped.
func liveOf(l api.ListResponse) []api.SandboxInfo {
	var out []api.SandboxInfo
	for _, s := range l.Sandboxes {
		if s.State != "stopped" && s.State != "stopping" {
			out = append(out, s)
		}
	}
	return out
}

// soakWorker loops over the mix: create, execs, a file written and read
// back, a failing call (a sandbox that does not exist), a hostile one (a
// path out of the sandbox's files), a snapshot taken and deleted, stop.
func soakWorker(ctx context.Context, c *client.Client, image string, cnt *soakCounter) {
	for ctx.Err() == nil {
		cr, err := c.Create(ctx, api.CreateRequest{Image: image})
		cnt.done(err, false)
		if err != nil {
			select { // do not spin on a refusing daemon
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		id := cr.SandboxID
		for i := range 5 {
			_, err := c.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: "echo soak " + strconv.Itoa(i)})
			cnt.done(err, false)
		}
		content := strings.Repeat("soak\n", 1000)
		_, err = c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: "/tmp/soak.txt", Content: &content})
		cnt.done(err, false)
		_, err = c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/tmp/soak.txt"})
		cnt.done(err, false)
		_, err = c.Exec(ctx, api.ExecRequest{SandboxID: "00000000-0000-0000-0000-000000000000", Cmd: "true"})
		cnt.done(err, true)
		_, err = c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/proc/self/../../../../nonexistent/secret"})
		cnt.done(err, true)
		snap, err := c.CreateSnapshot(ctx, id, "soak")
		cnt.done(err, false)
		if err == nil {
			_, err = c.DeleteSnapshot(context.WithoutCancel(ctx), snap.SnapshotID)
			cnt.done(err, false)
		}
		_, err = c.Stop(context.WithoutCancel(ctx), id, true)
		cnt.done(err, false)
	}
}

// readProc reads the daemon's RSS, fds and threads from /proc.
func readProc(pid int, w *SoakWindow) {
	if pid <= 0 {
		return
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "VmRSS:" {
				w.RSSKiB, _ = strconv.ParseInt(f[1], 10, 64)
			}
			if len(f) >= 2 && f[0] == "Threads:" {
				w.Threads, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
		w.FDs = int64(len(fds))
	}
}

// goroutines reads go_goroutines from the daemon's /metrics; -1 when it
// cannot.
func goroutines(ctx context.Context, c *client.Client) int64 {
	text, err := c.Prometheus(ctx)
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(n)
			}
		}
	}
	return -1
}

// slopes fits a line to each figure over the windows after the first and
// returns its slope per hour.
func slopes(ws []SoakWindow, window time.Duration) map[string]float64 {
	if len(ws) < 3 {
		return nil
	}
	ws = ws[1:]
	fit := func(get func(SoakWindow) int64) float64 {
		n := float64(len(ws))
		var sx, sy, sxx, sxy float64
		for i, w := range ws {
			x, y := float64(i), float64(get(w))
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		d := n*sxx - sx*sx
		if d == 0 {
			return 0
		}
		perWindow := (n*sxy - sx*sy) / d
		return math.Round(perWindow*float64(time.Hour/window)*100) / 100
	}
	return map[string]float64{
		"rss_kib":    fit(func(w SoakWindow) int64 { return w.RSSKiB }),
		"goroutines": fit(func(w SoakWindow) int64 { return w.Goroutines }),
		"fds":        fit(func(w SoakWindow) int64 { return w.FDs }),
		"threads":    fit(func(w SoakWindow) int64 { return w.Threads }),
	}
}
