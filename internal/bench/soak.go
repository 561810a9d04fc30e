package bench

// The soak (issue 38: 4): a mix of every kind of operation from several
// owners at once for a long time, reported per window: operations done by
// kind, errors by S-code, events received, the daemon's RSS, goroutines,
// open fds and threads, and the host objects of its sandboxes; at the end
// the slope of each over the windows after the first, the sandboxes left
// and the leak scan.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/hostscan"
)

const (
	// soakOpTimeout bounds each operation of the soak: one that takes
	// longer counts as an error "timeout <kind>".
	soakOpTimeout = 3 * time.Minute
	// soakPreviewWait bounds the wait for a sandbox's preview server to
	// answer.
	soakPreviewWait = 60 * time.Second
	// soakLeakWait bounds the wait for the host to drop the objects of
	// stopped sandboxes (a busy machine tears down slowly).
	soakLeakWait = 60 * time.Second
)

// SoakOwner is one owner of the soak.
type SoakOwner struct {
	Client *client.Client
	// Token is the owner's API token (preview GETs send it); E2BKey its
	// E2B key ("" sends openE2BKey).
	Token, E2BKey string
}

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
	// DataDir is the daemon's data dir: each window counts its host
	// objects and those of the soak's sandboxes; "" counts only the
	// latter's.
	DataDir string
	// Progress receives a line per window.
	Progress io.Writer
}

// SoakWindow is one window's figures.
type SoakWindow struct {
	Ops int64 `json:"ops"`
	// OpsByKind splits Ops by kind of operation ("exec", "create cold", ...).
	OpsByKind map[string]int64 `json:"ops_by_kind"`
	// Errors counts unexpected errors by "S-code kind" ("timeout kind"
	// for one past soakOpTimeout, "transport kind" for one without an
	// S-code); ErrorSamples holds the first message of each. Expected
	// counts the errors of the failing and hostile calls, which must fail.
	Errors       map[string]int64  `json:"errors"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	Expected     int64             `json:"expected_errors"`
	// Events is how many events the owners' event subscribers received.
	Events     int64 `json:"events_received"`
	RSSKiB     int64 `json:"rss_kib"`
	FDs        int64 `json:"fds"`
	Threads    int64 `json:"threads"`
	Goroutines int64 `json:"goroutines"`
	// HeapLiveKiB is the daemon's heap that its last GC found live
	// (go_gc_heap_live_bytes; -1 when unread): what a leak grows, unlike
	// RSS, which also holds garbage not yet collected, so follows the
	// window's throughput.
	HeapLiveKiB int64            `json:"heap_live_kib"`
	Live        int              `json:"live_sandboxes"`
	Host        hostscan.Objects `json:"host_objects"`
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
	// Leaks is what the leak scan found (hostscan.Leftovers) after the
	// soak; LeakScan says what it covered.
	Leaks    []string `json:"leaks"`
	LeakScan string   `json:"leak_scan"`
	// IDs are the sandboxes the soak made or saw, for the leak scan.
	IDs []string `json:"-"`
}

// soakCounter collects one window's operations and errors. What ends
// after the soak's context (cut off by its end) is not counted.
type soakCounter struct {
	ctx      context.Context
	mu       sync.Mutex
	ops      int64
	byKind   map[string]int64
	errs     map[string]int64
	samples  map[string]string
	expected int64
	events   int64
	// ids are all the sandboxes seen; never reset.
	ids map[string]bool
}

func newSoakCounter(ctx context.Context) *soakCounter {
	c := &soakCounter{ctx: ctx, ids: map[string]bool{}}
	c.take()
	return c
}

// do runs op, bounded by soakOpTimeout, under ctx (give the stops a
// context that outlives the soak's) and counts it as kind.
func (c *soakCounter) do(ctx context.Context, kind string, expectFail bool, op func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, soakOpTimeout)
	defer cancel()
	err := op(ctx)
	if err != nil && ctx.Err() == context.DeadlineExceeded && c.ctx.Err() == nil {
		err = fmt.Errorf("%w after %s: %v", context.DeadlineExceeded, soakOpTimeout, err)
	}
	c.done(kind, err, expectFail)
	return err
}

func (c *soakCounter) done(kind string, err error, expectFail bool) {
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	c.byKind[kind]++
	key := ""
	switch {
	case expectFail && err != nil:
		c.expected++
	case expectFail:
		key = "unexpected success " + kind
	case err != nil:
		key = soakCode(err) + " " + kind
	}
	if key != "" {
		c.errs[key]++
		if _, ok := c.samples[key]; !ok && err != nil {
			c.samples[key] = clip(err.Error(), 300)
		}
	}
}

// soakCode is err's S-code, "timeout" past soakOpTimeout, or "transport"
// for an error without one.
func soakCode(err error) string {
	var env *api.ErrorEnvelope
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &env) && env.Code != "":
		return env.Code
	}
	return "transport"
}

func (c *soakCounter) event() {
	c.mu.Lock()
	c.events++
	c.mu.Unlock()
}

func (c *soakCounter) saw(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if id != "" {
			c.ids[id] = true
		}
	}
}

func (c *soakCounter) allIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.ids))
	for id := range c.ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// take returns the window's figures into w and starts the next window.
func (c *soakCounter) take() (w SoakWindow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w = SoakWindow{Ops: c.ops, OpsByKind: c.byKind, Errors: c.errs, ErrorSamples: c.samples, Expected: c.expected, Events: c.events}
	c.ops, c.byKind, c.errs, c.samples, c.expected, c.events = 0, map[string]int64{}, map[string]int64{}, map[string]string{}, 0, 0
	return w
}

// Soak runs the mix with one worker and one event subscriber per owner
// until opts.Duration has passed, and reports each window.
func Soak(ctx context.Context, owners []SoakOwner, opts SoakOptions) (SoakReport, error) {
	if opts.Window <= 0 || opts.Duration < opts.Window {
		return SoakReport{}, fmt.Errorf("the soak needs a duration of at least one window (%s)", opts.Window)
	}
	if len(owners) == 0 {
		return SoakReport{}, errors.New("the soak needs an owner")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	cnt := newSoakCounter(ctx)
	var wg sync.WaitGroup
	for _, o := range owners {
		wg.Go(func() { soakWorker(ctx, o, opts.Image, cnt) })
		wg.Go(func() { soakSubscriber(ctx, o.Client, cnt) })
	}
	var rep SoakReport
	tick := time.NewTicker(opts.Window)
	defer tick.Stop()
	bg := context.WithoutCancel(ctx)
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			done = true
		}
		w := cnt.take()
		if done && w.Ops == 0 {
			break // the soak ended on a window's boundary
		}
		readProc(opts.DaemonPID, &w)
		w.Goroutines, w.HeapLiveKiB = daemonGauges(bg, owners[0].Client)
		for _, o := range owners {
			if l, err := o.Client.List(bg); err == nil {
				w.Live += len(liveOf(l))
			}
		}
		w.Host = hostscan.Count(opts.DataDir, soakIDs(cnt, opts.DataDir))
		rep.Windows = append(rep.Windows, w)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "soak: window %d: %d ops, errors %v, %d expected, %d events, rss %d KiB, heap live %d KiB, %d goroutines, %d fds, %d threads, %d live, host %+v\n",
				len(rep.Windows), w.Ops, w.Errors, w.Expected, w.Events, w.RSSKiB, w.HeapLiveKiB, w.Goroutines, w.FDs, w.Threads, w.Live, w.Host)
		}
	}
	wg.Wait()
	rep.Slopes = slopes(rep.Windows, opts.Window)
	for _, o := range owners {
		if l, err := o.Client.List(bg); err == nil {
			rep.LeftSandboxes += len(liveOf(l))
		}
	}
	rep.IDs, rep.Leaks = soakIDs(cnt, opts.DataDir), []string{}
	if opts.DataDir == "" {
		rep.Leaks = SoakLeakScan("", rep.IDs)
		rep.LeakScan = fmt.Sprintf("host objects of the %d sandboxes of the soak, after it stopped them", len(rep.IDs))
	}
	return rep, nil
}

// SoakLeakScan waits up to soakLeakWait for the host to hold nothing of
// dataDir (when not "") and of ids, and returns what remains.
func SoakLeakScan(dataDir string, ids []string) []string {
	deadline := time.Now().Add(soakLeakWait)
	for {
		left := hostscan.Leftovers(dataDir, ids)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(time.Second)
	}
}

// soakIDs adds the sandboxes in dataDir's runtime state directories (the
// warm pool's among them) to those the counter saw, and returns them all.
func soakIDs(cnt *soakCounter, dataDir string) []string {
	if dataDir != "" {
		for _, d := range hostscan.SandboxDirs(dataDir) {
			cnt.saw(filepath.Base(d))
		}
	}
	return cnt.allIDs()
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

// soakSubscriber keeps an event stream of the owner open for the whole
// soak and counts what it receives; a stream that ends is an operation
// (an error if it ended with one) and is opened again.
func soakSubscriber(ctx context.Context, c *client.Client, cnt *soakCounter) {
	for ctx.Err() == nil {
		err := c.StreamEvents(ctx, api.EventsRequest{}, func(api.EventRecord) error { cnt.event(); return nil })
		cnt.done("events stream", err, false)
		if err != nil {
			pause(ctx, time.Second)
		}
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// soakWorker runs rounds of the mix until ctx ends; even rounds create
// from the pool, odd ones cold.
func soakWorker(ctx context.Context, o SoakOwner, image string, cnt *soakCounter) {
	x := newE2BClientKey(o.Client, o.E2BKey)
	defer x.close()
	var defaultMem uint32
	for round := 0; ctx.Err() == nil; round++ {
		soakRound(ctx, o, x, image, round%2 == 1, &defaultMem, cnt)
		soakE2B(ctx, o.Client, x, image, cnt)
	}
}

// soakRound is one round of the REST mix on a sandbox of its own: create,
// execs, a streamed exec, a PTY, files written and read back (whole and
// streamed), a failing call (a sandbox that does not exist), a hostile one
// (a path out of the sandbox's files), a snapshot taken and deleted, a
// fork that answers an exec, a preview server reached through its
// preview URL, stop.
//
// A cold create asks for network: true and 1 MiB more memory than the
// default (*defaultMem, learned from the first create): the pool holds only
// sandboxes of the default shape (it would serve network: true, attaching
// a network at the claim), so it boots, and makes a netns, a veth and nft
// rules.
func soakRound(ctx context.Context, o SoakOwner, x *e2bClient, image string, cold bool, defaultMem *uint32, cnt *soakCounter) {
	c := o.Client
	req, kind := api.CreateRequest{Image: image}, "create pool"
	if cold {
		req.Network, kind = true, "create cold"
		if *defaultMem > 0 {
			req.MemoryMB = *defaultMem + 1
		}
	}
	var id string
	err := cnt.do(ctx, kind, false, func(ctx context.Context) error {
		cr, err := c.Create(ctx, req)
		id = cr.SandboxID
		return err
	})
	cnt.saw(id)
	if err != nil {
		pause(ctx, time.Second) // do not spin on a refusing daemon
		return
	}
	if *defaultMem == 0 && !cold {
		if info, err := c.Get(ctx, id); err == nil {
			*defaultMem = info.MemoryMB
		}
	}
	bg := context.WithoutCancel(ctx)
	defer cnt.do(bg, "stop", false, func(ctx context.Context) error { _, err := c.Stop(ctx, id, true); return err })
	for i := range 3 {
		cnt.do(ctx, "exec", false, func(ctx context.Context) error {
			return execOK(c.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: "echo soak " + strconv.Itoa(i)}))
		})
	}
	cnt.do(ctx, "exec stream", false, func(ctx context.Context) error {
		chunks := 0
		r, err := c.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "for i in 1 2 3; do echo $i; done"}},
			func(string, json.RawMessage) error { chunks++; return nil })
		if err == nil && chunks == 0 {
			err = errors.New("the stream sent no event")
		}
		return execOK(r, err)
	})
	cnt.do(ctx, "pty", false, func(ctx context.Context) error { return soakPTY(ctx, c, id) })
	content := strings.Repeat("soak\n", 1000)
	cnt.do(ctx, "file write", false, func(ctx context.Context) error {
		_, err := c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: "/tmp/soak.txt", Content: &content})
		return err
	})
	cnt.do(ctx, "file read", false, func(ctx context.Context) error {
		r, err := c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/tmp/soak.txt"})
		if err == nil && (r.Body == nil || *r.Body != content) {
			err = fmt.Errorf("read back %d bytes unlike the %d written", r.Size, len(content))
		}
		return err
	})
	cnt.do(ctx, "file transfer", false, func(ctx context.Context) error { return soakTransfer(ctx, c, id) })
	cnt.do(ctx, "failing call", true, func(ctx context.Context) error {
		_, err := c.Exec(ctx, api.ExecRequest{SandboxID: "00000000-0000-0000-0000-000000000000", Cmd: "true"})
		return err
	})
	cnt.do(ctx, "hostile call", true, func(ctx context.Context) error {
		_, err := c.FsRead(ctx, api.FsReadRequest{SandboxID: id, Path: "/proc/self/../../../../nonexistent/secret"})
		return err
	})
	var snapID string
	if cnt.do(ctx, "snapshot", false, func(ctx context.Context) error {
		s, err := c.CreateSnapshot(ctx, id, "soak")
		snapID = s.SnapshotID
		return err
	}) == nil {
		cnt.do(bg, "snapshot delete", false, func(ctx context.Context) error { _, err := c.DeleteSnapshot(ctx, snapID); return err })
	}
	var forks []string
	cnt.do(ctx, "fork", false, func(ctx context.Context) error {
		f, err := c.Fork(ctx, id, 1)
		forks = f.SandboxIDs
		return err
	})
	cnt.saw(forks...)
	for _, f := range forks {
		cnt.do(ctx, "exec", false, func(ctx context.Context) error {
			return execOK(c.Exec(ctx, api.ExecRequest{SandboxID: f, Cmd: "true"}))
		})
		cnt.do(bg, "stop", false, func(ctx context.Context) error { _, err := c.Stop(ctx, f, true); return err })
	}
	cnt.do(ctx, "preview", false, func(ctx context.Context) error { return soakPreview(ctx, o, id) })
}

// soakE2B is one round of E2B SDK calls, as E2B's SDK makes them:
// Sandbox.create, commands.run('true'), Sandbox.kill.
func soakE2B(ctx context.Context, c *client.Client, x *e2bClient, image string, cnt *soakCounter) {
	var sb e2bSandbox
	err := cnt.do(ctx, "e2b create", false, func(ctx context.Context) error {
		var err error
		sb, err = x.create(ctx, e2bCreateBody(image))
		return err
	})
	cnt.saw(sb.ID)
	if err != nil {
		pause(ctx, time.Second)
		return
	}
	cnt.do(ctx, "e2b commands.run", false, func(ctx context.Context) error {
		_, _, err := x.run(ctx, sb, []string{"/bin/bash", "-l", "-c", "true"})
		return err
	})
	cnt.do(context.WithoutCancel(ctx), "e2b kill", false, func(ctx context.Context) error { return x.killAndWait(ctx, c, sb.ID) })
}

// execOK is err, or an error when the command did not exit 0.
func execOK(r api.ExecResponse, err error) error {
	if err == nil && (r.ExitCode == nil || *r.ExitCode != 0) {
		code := "none"
		if r.ExitCode != nil {
			code = strconv.Itoa(*r.ExitCode)
		}
		err = fmt.Errorf("the command ended with exit %s (timed out %t), stderr %q", code, r.TimedOut, clip(r.Stderr, 200))
	}
	return err
}

// soakPTY runs a command on a terminal of sandbox id and waits for its
// exit 0.
func soakPTY(ctx context.Context, c *client.Client, id string) error {
	t, err := c.Terminal(ctx, id, client.TerminalOptions{Cmd: []string{"sh", "-c", "tty && echo pty-ok"}})
	if err != nil {
		return err
	}
	defer t.Close()
	code, err := t.Wait()
	if err == nil && code != 0 {
		err = fmt.Errorf("the terminal's command exited %d", code)
	}
	return err
}

// soakTransfer uploads 256 KiB to sandbox id as a stream and downloads it
// back, byte for byte.
func soakTransfer(ctx context.Context, c *client.Client, id string) error {
	data := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
	if _, err := c.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/tmp/soak.bin"}, bytes.NewReader(data)); err != nil {
		return err
	}
	_, body, err := c.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/tmp/soak.bin"})
	if err != nil {
		return err
	}
	defer body.Close()
	got, err := io.ReadAll(body)
	if err == nil && !bytes.Equal(got, data) {
		err = fmt.Errorf("downloaded %d bytes, uploaded %d", len(got), len(data))
	}
	return err
}

// soakPreview starts a web server in sandbox id, exposes its port, GETs
// a page through the preview URL (waiting for the server to start), and
// unexposes the port.
func soakPreview(ctx context.Context, o SoakOwner, id string) error {
	c := o.Client
	if _, err := c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-c", previewServer(4096)}}); err != nil {
		return err
	}
	info, err := c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000})
	if err != nil {
		return err
	}
	url := c.URL() + info.URL + "small"
	deadline := time.Now().Add(soakPreviewWait)
	for {
		if err = previewGetOnce(ctx, url, o.Token); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		pause(ctx, 200*time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("the preview server did not answer within %s: %w", soakPreviewWait, err)
	}
	_, err = c.UnexposePort(ctx, id, 8000)
	return err
}

// previewGetOnce GETs url with token and wants a 200.
func previewGetOnce(ctx context.Context, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return err
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

// daemonGauges reads go_goroutines and go_gc_heap_live_bytes (in KiB)
// from the daemon's /metrics; -1 for one it cannot.
func daemonGauges(ctx context.Context, c *client.Client) (goroutines, heapLiveKiB int64) {
	goroutines, heapLiveKiB = -1, -1
	text, err := c.Prometheus(ctx)
	if err != nil {
		return
	}
	if v, ok := metricValue(text, "go_goroutines"); ok {
		goroutines = int64(v)
	}
	if v, ok := metricValue(text, "go_gc_heap_live_bytes"); ok {
		heapLiveKiB = int64(v) >> 10
	}
	return
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
		"rss_kib":        fit(func(w SoakWindow) int64 { return w.RSSKiB }),
		"heap_live_kib":  fit(func(w SoakWindow) int64 { return w.HeapLiveKiB }),
		"goroutines":     fit(func(w SoakWindow) int64 { return w.Goroutines }),
		"fds":            fit(func(w SoakWindow) int64 { return w.FDs }),
		"threads":        fit(func(w SoakWindow) int64 { return w.Threads }),
		"host_processes": fit(func(w SoakWindow) int64 { return int64(w.Host.Processes) }),
		"host_mounts":    fit(func(w SoakWindow) int64 { return int64(w.Host.Mounts) }),
		"host_netns":     fit(func(w SoakWindow) int64 { return int64(w.Host.Netns) }),
		"host_cgroups":   fit(func(w SoakWindow) int64 { return int64(w.Host.Cgroups) }),
		"host_veths":     fit(func(w SoakWindow) int64 { return int64(w.Host.Veths) }),
		"host_nft_rules": fit(func(w SoakWindow) int64 { return int64(w.Host.NftRules) }),
	}
}
