package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench"
	"github.com/hutch-dev/hutch/internal/kubecp"
)

func (a *app) benchCmd() *cobra.Command {
	opts := bench.Options{Progress: a.stderr}
	var scenarios, jsonOut string
	var private bool
	var streamMiB int64
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure sandbox latency, throughput and memory, with Docker and runsc as baselines",
		Long: "Measure sandbox latency, throughput, file transfers and memory against the daemon at $HUTCH_URL,\n" +
			"or, with --private, against a daemon the bench starts and stops itself (a warm pool of the\n" +
			"image, room for --max-idle sandboxes), and for the scenarios of the warm pool a second one\n" +
			"with the default pool settings (sized by demand). Docker (through its Engine API, with the daemon's own\n" +
			"root filesystem imported) and `runsc do` are measured in the same run when present.\n" +
			"Prints a Markdown table on stdout and writes the samples as JSON to --json-out.\n" +
			"The runtime scenarios (" + strings.Join(bench.RuntimeNames(), ", ") + ") measure the same thing in each\n" +
			"runtime of --runtimes (e.g. gvisor,microvm), compared with the first; --runtimes alone runs just them.\n" +
			"Scenarios: " + strings.Join(bench.Names(), ", ") + ".",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Image, "image", "python", "catalog image of the sandboxes")
	fl.IntVar(&opts.Runs, "runs", 30, "timed runs of each latency scenario (and sandboxes of the memory one)")
	fl.IntVar(&opts.Warmup, "warmup", 3, "untimed runs before the timed ones")
	fl.StringVar(&scenarios, "scenarios", strings.Join(bench.DefaultNames(), ","), "comma-separated scenarios to run (all but the runtime scenarios; with --runtimes and without this flag, the runtime scenarios)")
	fl.IntVar(&opts.Sandboxes, "sandboxes", 8, "sandboxes of the throughput scenario")
	fl.IntVar(&opts.Callers, "callers", 2, "concurrent callers per sandbox in the throughput scenario")
	fl.DurationVar(&opts.Duration, "duration", 5*time.Second, "length of the throughput scenario")
	fl.Int64Var(&streamMiB, "stream-mib", 100, "MiB of the streamed upload and download")
	fl.IntVar(&opts.MaxIdle, "max-idle", 120, "most idle sandboxes the capacity scenario creates")
	fl.IntVar(&opts.ForkWide, "fork-wide", 0, "fork-exec also times forks of this many copies (e.g. 100; 0: only its forks of 10); the daemon needs room for them (--private makes room for --max-idle)") // issue 46
	fl.IntSliceVar(&opts.Bursts, "bursts", []int{10, 50}, "sizes of the create-burst scenario's bursts (creates issued at once)")
	fl.Float64Var(&opts.SteadyRate, "steady-rate", 2, "creates per second of the create-steady scenario")
	fl.DurationVar(&opts.SteadyDuration, "steady-duration", 30*time.Second, "length of the create-steady scenario")
	// issue 46: 3
	fl.Float64Var(&opts.MixedRate, "mixed-rate", 2, "creates per second of the create-mixed scenario")
	fl.DurationVar(&opts.MixedDuration, "mixed-duration", 60*time.Second, "length of the create-mixed scenario")
	fl.StringSliceVar(&opts.MixedImages, "mixed-images", []string{"python", "node"}, "catalog images the create-mixed scenario's creates cycle through")
	fl.StringVar(&opts.EngineURL, "engine-url", "", `engine WebSocket of the daemon (default: ws://127.0.0.1:49134 for the default daemon; "" skips)`)
	fl.StringVar(&opts.DockerSocket, "docker", "/var/run/docker.sock", `Docker Engine socket of the baseline ("" skips Docker)`)
	fl.StringVar(&opts.ImageCache, "image-cache", "", "the daemon's image cache, whose root filesystem Docker imports (default: $HUTCH_DATA_DIR/images)")
	fl.StringVar(&opts.DataDir, "data-dir", "", "the daemon's data directory, on this host, whose growth template-disk measures (default: $HUTCH_DATA_DIR)")
	fl.BoolVar(&private, "private", false, "start a daemon of its own for the run, and stop it after")
	fl.StringVar(&opts.E2BKey, "e2b-key", "", "X-API-KEY of the E2B scenarios (default $E2B_API_KEY; a daemon without api_tokens and e2b.api_keys, like --private's, takes any)")
	fl.StringSliceVar(&opts.Runtimes, "runtimes", nil, "isolation runtimes the runtime scenarios measure in, each in turn, compared with the first (default: the daemon's default runtime; one the daemon lacks is skipped)")
	fl.StringVar(&jsonOut, "json-out", "bench-results.json", `write the results as JSON to this file ("" skips it)`)
	// issue 38: the soak.
	var soak soakFlags
	fl.DurationVar(&soak.duration, "soak", 0, "instead of the scenarios, run a mix of every kind of operation from several owners for this long (with --private: 3 owners of its own daemon) and report per --soak-window: ops, errors by S-code, daemon RSS, goroutines, fds, host objects; at the end slopes and the leak scan")
	fl.DurationVar(&soak.window, "soak-window", 5*time.Minute, "length of each window of --soak")
	fl.StringVar(&soak.pprof, "soak-pprof", "", "with --soak --private, serve the private daemon's net/http/pprof on this loopback address, for heap profiles during the soak")
	// issue 35: the cluster node's targets.
	var cluster clusterFlags
	fl.BoolVar(&cluster.on, "cluster", false, "instead of the scenarios, start a control plane (make kube-deps's binaries, from --kube-bin) and three daemons joined to it as nodes on loopback, and measure Pod created → Ready (cold and from a warm pool) against one daemon's create → first exec, --cluster-pods Pods at once, a killed node's Pods deleted, and the control plane's RSS")
	fl.IntVar(&cluster.pods, "cluster-pods", 100, "Pods created at once by --cluster")
	fl.StringVar(&cluster.kubeBin, "kube-bin", "", "the control plane's binaries for --cluster (default: make kube-deps's cache directory)")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) (err error) {
		if soak.duration > 0 {
			return a.runSoak(cmd.Context(), soak, opts.Image, opts.ImageCache, private, jsonOut)
		}
		if cmd.Flags().Changed("runtimes") && !cmd.Flags().Changed("scenarios") {
			scenarios = strings.Join(bench.RuntimeNames(), ",")
		}
		sel, err := bench.Select(strings.Split(scenarios, ","))
		if err != nil {
			return usagef("--scenarios: %v", err)
		}
		opts.StreamBytes = streamMiB << 20
		if !cmd.Flags().Changed("e2b-key") {
			opts.E2BKey = a.getenv("E2B_API_KEY")
		}
		if err := opts.Validate(); err != nil {
			return usagef("%v", err)
		}
		if opts.ImageCache == "" {
			opts.ImageCache = a.defaultImageCache()
		}
		if opts.DataDir == "" { // issue 39: template-disk
			opts.DataDir = a.dataDir()
		}
		opts.RunscPath = runscNextToSelf()
		if cluster.on { // issue 35
			if cluster.kubeBin == "" {
				if cluster.kubeBin, err = kubecp.BinDir(); err != nil {
					return err
				}
			}
			return a.runClusterBench(cmd.Context(), cluster, opts, jsonOut)
		}
		opts.Token = a.getenv("HUTCH_TOKEN")
		c := a.client()
		if !cmd.Flags().Changed("engine-url") {
			opts.EngineURL = engineURLFor(c.URL())
		}
		// issue 37: the egress scenarios run on a daemon of their own.
		if bench.NeedsEgressDaemon(sel) {
			var stop func() error
			opts.Egress, stop = a.startEgress(cmd.Context(), opts.ImageCache)
			defer func() { err = errors.Join(err, stop()) }()
			if opts.Egress != nil && bench.EgressOnly(sel) {
				return a.runBench(cmd.Context(), opts.Egress.Client, opts, sel, jsonOut)
			}
		}
		if private {
			d, err := startPrivateDaemon(cmd.Context(), privateConfig(opts.ImageCache, opts.Image, opts.MaxIdle), a.stderr)
			if err != nil {
				return err
			}
			var pd *privateDaemon
			if bench.NeedsPoolDaemon(sel) {
				if pd, err = startPrivateDaemon(cmd.Context(), privatePoolConfig(opts.ImageCache, opts.MaxIdle), a.stderr); err != nil {
					return errors.Join(err, d.stop())
				}
				opts.PoolDaemon = client.New(pd.url, "")
			}
			c, opts.EngineURL, opts.Token = client.New(d.url, ""), d.engineURL, ""
			opts.DataDir = filepath.Join(d.dir, "data") // issue 39
			err = a.runBench(cmd.Context(), c, opts, sel, jsonOut)
			if pd != nil {
				err = errors.Join(err, pd.stop())
			}
			return errors.Join(err, d.stop())
		}
		return a.runBench(cmd.Context(), c, opts, sel, jsonOut)
	})
	return cmd
}

// runBench runs the benchmark against c and prints and writes its report.
func (a *app) runBench(ctx context.Context, c *client.Client, opts bench.Options, sel []bench.Scenario, jsonOut string) error {
	rep, err := bench.Run(ctx, c, opts, sel)
	if err != nil {
		return err
	}
	return a.reportBench(rep, jsonOut, "some scenarios failed (listed under Failed)")
}

// benchReport is a report of the bench: its Markdown, and whether a
// measurement failed.
type benchReport interface {
	WriteMarkdown(w io.Writer) error
	Failed() bool
}

// reportBench prints rep, writes it as JSON to jsonOut, and is the error
// failed when rep has a failure.
func (a *app) reportBench(rep benchReport, jsonOut, failed string) error {
	if err := rep.WriteMarkdown(a.stdout); err != nil {
		return err
	}
	if err := a.writeResults(rep, jsonOut); err != nil {
		return err
	}
	if rep.Failed() {
		return errors.New(failed)
	}
	return nil
}

// writeResults writes rep as JSON to jsonOut, unless that is "".
func (a *app) writeResults(rep any, jsonOut string) error {
	if jsonOut == "" {
		return nil
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	fmt.Fprintf(a.stderr, "bench: results written to %s\n", jsonOut)
	return nil
}

// runscNextToSelf is the runsc binary beside this one, as `make build`
// lays them out; "" when this binary's path is unknown.
func runscNextToSelf() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(self), "runsc")
}
