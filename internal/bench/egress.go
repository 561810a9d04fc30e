package bench

// issue 37: the egress proxy's scenarios. They run on a daemon of their
// own (Options.Egress, which `hutch bench` starts when one is selected),
// whose resolver names the EgressTarget's server, so that a sandbox's
// request to it goes through the proxy as a request to any name does.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench/pyclient"
)

// Names of the egress scenarios.
const (
	NameEgressHTTPS    = "egress-https"
	NameEgressDownload = "egress-download"
)

// EgressDaemon is the daemon of the egress scenarios: its resolver is the
// target's, and it verifies the target's certificate (SSL_CERT_FILE).
type EgressDaemon struct {
	Client *client.Client
	// PID is the daemon's process, whose CPU time and RSS the scenarios
	// read from /proc.
	PID    int
	Target *EgressTarget
}

// DaemonConfig is the config of the egress scenarios' daemon (beside
// its image cache and pool settings): the target's resolver for the sandboxes' names, and
// private ranges open (the target is on one).
func (t *EgressTarget) DaemonConfig() string {
	return fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", t.Resolver)
}

// DaemonEnv is the environment of the egress scenarios' daemon: it
// trusts the target's certificate.
func (t *EgressTarget) DaemonEnv() []string {
	return []string{"SSL_CERT_FILE=" + t.Roots}
}

// EgressOnly reports whether every one of scenarios is an egress one
// (then the run needs no other daemon).
func EgressOnly(scenarios []Scenario) bool {
	for _, s := range scenarios {
		if !NeedsEgressDaemon([]Scenario{s}) {
			return false
		}
	}
	return len(scenarios) > 0
}

// NeedsEgressDaemon reports whether scenarios include an egress one.
func NeedsEgressDaemon(scenarios []Scenario) bool {
	for _, s := range scenarios {
		if s.Name == NameEgressHTTPS || s.Name == NameEgressDownload {
			return true
		}
	}
	return false
}

// EgressFigures are the egress scenarios' derived figures.
type EgressFigures struct {
	// AddedMs is each proxied path's p50 minus the direct path's, and
	// Ratio its p50 over the direct one's.
	AddedMs map[string]float64 `json:"p50_added_ms,omitempty"`
	Ratio   map[string]float64 `json:"p50_ratio,omitempty"`
	// DaemonCPUMs is the daemon's CPU time per request (per download in
	// egress-download) on each path, and ProxyCPUMs the part the proxy
	// adds (minus the direct path's).
	DaemonCPUMs map[string]float64 `json:"daemon_cpu_ms_per_request,omitempty"`
	ProxyCPUMs  map[string]float64 `json:"proxy_cpu_ms_per_request,omitempty"`
	// MiBPerSec is each path's download rate (the p50 download), and
	// RSSGrowthMiB the daemon's largest RSS during the proxied downloads
	// over its RSS before them.
	MiBPerSec    map[string]float64 `json:"mib_per_sec,omitempty"`
	RSSGrowthMiB *float64           `json:"daemon_rss_growth_mib,omitempty"`
}

// egressPath is one way of reaching the target: its policy.
type egressPath struct {
	name, title string
	policy      func(t *EgressTarget) api.EgressPolicy
}

// The paths of the scenarios. Every request goes to the target's address
// with its name in the SNI or Host: direct, a CIDR rule admits it and the
// proxy is not on the way; by name, the proxy decides on the SNI (and
// tunnels) or the Host (and forwards); with a transform, the proxy
// terminates TLS and sets a header from a secret.
var (
	pathDirect = egressPath{"direct", "direct (CIDR-only policy, no proxy)", func(t *EgressTarget) api.EgressPolicy {
		return api.EgressPolicy{AllowOut: []string{t.Addr + "/32"}}
	}}
	pathByName = egressPath{"sni", "through the proxy, filtered by SNI (HTTPS) or Host (HTTP)", func(*EgressTarget) api.EgressPolicy {
		return api.EgressPolicy{AllowOut: []string{EgressName}}
	}}
	pathTransform = egressPath{"transform", "through the proxy, TLS terminated, a secret transform", func(*EgressTarget) api.EgressPolicy {
		return api.EgressPolicy{AllowOut: []string{EgressName}, Transforms: []api.EgressTransform{
			{Host: EgressName, Headers: map[string]string{"X-Bench-Key": "{{secret." + egressSecret + "}}"}}}}
	}}
)

// egressSecret names the secret of the transform path.
const egressSecret = "HUTCH_BENCH_EGRESS"

// egressRequestsPerRun is the HTTPS requests per path per --runs: a
// request costs the daemon less than its CPU clock's tick (10 ms), so it
// takes hundreds to tell.
const egressRequestsPerRun = 10

// egressRounds is how many times the HTTPS scenario goes through its
// paths in turn, so that a change of the machine's load weighs on each.
const egressRounds = 3

// egressHTTPS times an HTTPS request on a new connection on each path, in
// one sandbox whose policy changes between them, and the daemon's CPU
// time per request on each.
func egressHTTPS(ctx context.Context, e *env) (Result, error) {
	ed, err := e.egressDaemon()
	if err != nil {
		return Result{}, err
	}
	t := ed.Target
	if _, err := ed.Client.SetSecret(ctx, egressSecret, t.Secret); err != nil {
		return Result{}, err
	}
	defer func() { _, _ = ed.Client.DeleteSecret(context.WithoutCancel(ctx), egressSecret) }()
	paths := []egressPath{pathDirect, pathByName, pathTransform}
	samples := map[string][]time.Duration{}
	ticks := map[string]uint64{}
	perExec := max(1, e.opts.Runs*egressRequestsPerRun/egressRounds)
	keyedBefore := t.Keyed()
	err = e.withEgressSandbox(ctx, ed, pathTransform.policy(t), func(id string) error {
		for round := range egressRounds {
			for _, p := range paths {
				e.progress("egress-https: round %d, %s", round+1, p.name)
				if _, err := ed.Client.UpdateNetwork(ctx, id, p.policy(t)); err != nil {
					return err
				}
				before, ok := readStat(ed.PID)
				res, err := e.execOn(ctx, ed.Client, id, "python3", "-c", pyclient.HTTPS, t.Addr, "443", EgressName,
					strconv.Itoa(perExec), string(t.CAPEM), strconv.Itoa(e.opts.Warmup))
				after, ok2 := readStat(ed.PID)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				if ok && ok2 {
					ticks[p.name] += after.ticks - before.ticks
				}
				got, err := parseNanos(res.Stdout, perExec)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				samples[p.name] = append(samples[p.name], got...)
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	if keyed, want := t.Keyed()-keyedBefore, int64(egressRounds*(perExec+e.opts.Warmup)); keyed != want {
		return Result{}, fmt.Errorf("the target got the transform's secret in %d requests, not %d", keyed, want)
	}
	n := egressRounds * perExec
	fig := &EgressFigures{AddedMs: map[string]float64{}, Ratio: map[string]float64{}, DaemonCPUMs: map[string]float64{}, ProxyCPUMs: map[string]float64{}}
	stats := map[string]Stats{}
	for _, p := range paths {
		stats[p.name] = Summarize(samples[p.name])
		fig.DaemonCPUMs[p.name] = float64(ticks[p.name]) * float64(time.Second/clockTicks) / float64(time.Millisecond) / float64(n+e.opts.Warmup*egressRounds)
	}
	var notes []string
	for _, p := range paths[1:] {
		fig.AddedMs[p.name] = ms(stats[p.name].P50 - stats[pathDirect.name].P50)
		fig.Ratio[p.name] = float64(stats[p.name].P50) / float64(stats[pathDirect.name].P50)
		fig.ProxyCPUMs[p.name] = fig.DaemonCPUMs[p.name] - fig.DaemonCPUMs[pathDirect.name]
		notes = append(notes, fmt.Sprintf("%s p50 %+.2f ms (×%.2f), proxy CPU %.3f ms/request", p.name, fig.AddedMs[p.name], fig.Ratio[p.name], fig.ProxyCPUMs[p.name]))
	}
	byName := stats[pathByName.name]
	res := Result{Latency: &byName, Egress: fig,
		Note: fmt.Sprintf("a new TLS connection per request from python in the sandbox to a server in a network namespace, %d per path in %d interleaved rounds; over direct: %s; daemon CPU per request: direct %.3f ms (the exec's share), sni %.3f, transform %.3f (/proc, 10 ms ticks)",
			n, egressRounds, strings.Join(notes, "; "), fig.DaemonCPUMs["direct"], fig.DaemonCPUMs["sni"], fig.DaemonCPUMs["transform"])}
	for _, p := range []egressPath{pathDirect, pathTransform} {
		st := stats[p.name]
		res.Baselines = append(res.Baselines, Result{Name: p.name, Title: p.title, Latency: &st})
	}
	return res, nil
}

// downloadScript GETs /blob?bytes=argv[4] from argv[2] (port 80, or 443
// over TLS when argv[1] is "https") with Host and SNI argv[3], the CA
// argv[5] trusted, and prints the bytes read and the nanoseconds taken.
const downloadScript = `
import socket, ssl, sys, time
scheme, addr, name, size, ca = sys.argv[1:6]
t = time.perf_counter()
s = socket.create_connection((addr, 443 if scheme == "https" else 80), timeout=30)
if scheme == "https":
    ctx = ssl.create_default_context()
    ctx.load_verify_locations(cadata=ca)
    s = ctx.wrap_socket(s, server_hostname=name)
s.sendall(("GET /blob?bytes=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (size, name)).encode())
buf = memoryview(bytearray(1 << 20))
total = 0
while True:
    k = s.recv_into(buf)
    if not k:
        break
    total += k
print(total, int((time.perf_counter() - t) * 1e9))
`

// egressDownload times the download of StreamBytes over plain HTTP
// through the proxy (by Host), over HTTPS through it (by SNI, tunnelled)
// and over both directly, with the daemon's CPU time per download, and
// samples the daemon's RSS meanwhile.
func egressDownload(ctx context.Context, e *env) (Result, error) {
	ed, err := e.egressDaemon()
	if err != nil {
		return Result{}, err
	}
	t := ed.Target
	type way struct {
		path   egressPath
		scheme string
		title  string
	}
	ways := []way{
		{pathByName, "http", "HTTP through the proxy, by Host"},
		{pathByName, "https", "HTTPS through the proxy, by SNI (tunnelled)"},
		{pathDirect, "http", "HTTP direct (CIDR-only policy, no proxy)"},
		{pathDirect, "https", "HTTPS direct (CIDR-only policy, no proxy)"},
	}
	runs := max(1, min(e.opts.Runs, 3))
	samples := make([][]time.Duration, len(ways))
	ticks := make([]uint64, len(ways))
	var rss rssPeak
	err = e.withEgressSandbox(ctx, ed, pathByName.policy(t), func(id string) error {
		rss.start(ed.PID)
		defer rss.stop()
		for range runs {
			for i, w := range ways {
				e.progress("egress-download: %s", w.title)
				if _, err := ed.Client.UpdateNetwork(ctx, id, w.path.policy(t)); err != nil {
					return err
				}
				before, ok := readStat(ed.PID)
				res, err := e.execOn(ctx, ed.Client, id, "python3", "-c", downloadScript, w.scheme, t.Addr, EgressName,
					strconv.FormatInt(e.opts.StreamBytes, 10), string(t.CAPEM))
				if after, ok2 := readStat(ed.PID); ok && ok2 {
					ticks[i] += after.ticks - before.ticks
				}
				if err != nil {
					return fmt.Errorf("%s: %w", w.title, err)
				}
				f := strings.Fields(res.Stdout)
				if len(f) != 2 {
					return fmt.Errorf("%s: unexpected output %q", w.title, clip(res.Stdout, 200))
				}
				got, _ := strconv.ParseInt(f[0], 10, 64)
				ns, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil || got < e.opts.StreamBytes {
					return fmt.Errorf("%s: read %d bytes of %d", w.title, got, e.opts.StreamBytes)
				}
				samples[i] = append(samples[i], time.Duration(ns))
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	growth := rss.growthMiB()
	fig := &EgressFigures{MiBPerSec: map[string]float64{}, RSSGrowthMiB: &growth, DaemonCPUMs: map[string]float64{}}
	var res Result
	var rates []string
	for i, w := range ways {
		st := Summarize(samples[i])
		rate := float64(e.opts.StreamBytes) / (1 << 20) / st.P50.Seconds()
		key := w.path.name + "-" + w.scheme
		fig.MiBPerSec[key] = rate
		fig.DaemonCPUMs[key] = float64(ticks[i]) * float64(time.Second/clockTicks) / float64(time.Millisecond) / float64(runs)
		rates = append(rates, fmt.Sprintf("%s %.0f MiB/s (daemon CPU %.0f ms per download)", w.title, rate, fig.DaemonCPUMs[key]))
		if i == 0 {
			res = Result{Latency: &st, Egress: fig}
			continue
		}
		res.Baselines = append(res.Baselines, Result{Name: key, Title: w.title, Latency: &st})
	}
	res.Note = fmt.Sprintf("%s from a server in a network namespace to python in the sandbox, %d runs per way, interleaved; p50 rates: %s; daemon RSS growth during the downloads %.1f MiB",
		sizeText(e.opts.StreamBytes), runs, strings.Join(rates, ", "), growth)
	return res, nil
}

// egressDaemon is the run's egress daemon, or a skip.
func (e *env) egressDaemon() (*EgressDaemon, error) {
	if e.opts.Egress == nil {
		return nil, skipf("needs the egress daemon and server that `hutch bench` sets up (as root) when an egress scenario is selected")
	}
	return e.opts.Egress, nil
}

// withEgressSandbox runs fn with a sandbox of the egress daemon created
// with policy (off the clock), stopped after.
func (e *env) withEgressSandbox(ctx context.Context, ed *EgressDaemon, policy api.EgressPolicy, fn func(id string) error) error {
	sb, err := ed.Client.Create(ctx, api.CreateRequest{Image: e.opts.Image, Name: sandboxName, Egress: &policy})
	if err != nil {
		return fmt.Errorf("creating a %s sandbox: %w", e.opts.Image, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		_, _ = ed.Client.Stop(sctx, sb.SandboxID, true)
	}()
	return fn(sb.SandboxID)
}

// execOn is env.exec on another daemon's client.
func (e *env) execOn(ctx context.Context, c *client.Client, id string, argv ...string) (api.ExecResponse, error) {
	res, err := c.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: argv, TimeoutMs: uint64(execTimeout.Milliseconds())})
	if err != nil {
		return res, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return res, checkExit(argv[0], res)
}

// parseNanos parses want durations in nanoseconds separated by spaces.
func parseNanos(out string, want int) ([]time.Duration, error) {
	f := strings.Fields(out)
	if len(f) != want {
		return nil, fmt.Errorf("want %d durations, got %q", want, clip(out, 200))
	}
	ds := make([]time.Duration, len(f))
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		ds[i] = time.Duration(n)
	}
	return ds, nil
}

// rssPeak samples a process's RSS every 20 ms between start and stop.
type rssPeak struct {
	pid         int
	first, peak int64 // KiB
	done        chan struct{}
	wg          sync.WaitGroup
}

func (r *rssPeak) start(pid int) {
	r.pid, r.done = pid, make(chan struct{})
	r.first = r.sample()
	r.peak = r.first
	r.wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-tick.C:
				r.peak = max(r.peak, r.sample())
			}
		}
	})
}

func (r *rssPeak) stop() {
	close(r.done)
	r.wg.Wait()
	r.peak = max(r.peak, r.sample())
}

func (r *rssPeak) sample() int64 {
	var w SoakWindow
	readProc(r.pid, &w)
	return w.RSSKiB
}

// growthMiB is the peak over the first sample.
func (r *rssPeak) growthMiB() float64 { return float64(r.peak-r.first) / 1024 }
